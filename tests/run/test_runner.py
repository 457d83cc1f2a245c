"""run_plans against the in-process sandbox: chunks, canary, dry run, breakers, stops."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from recordsync.core.errors import AuthError, ObjectTypeNotFound, RunAborted
from recordsync.core.model import PreparedRow, RowStatus, SourceRow, StepPlan
from recordsync.core.secret import Secret
from recordsync.run.runner import RunLimits, run_plans
from recordsync.sandbox import create_app
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryPolicy
from recordsync.send.step import SendOptions

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

KEY = "sk_live_runner_tests_abcdef0123456789"


class Recorder:
    """ASGI wrapper that records (method, path) of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.calls.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


@contextmanager
def sandbox(tmp_path: Path, key: str = KEY) -> Iterator[tuple[RecordServiceClient, Recorder]]:
    app = create_app(tmp_path / "s.db", api_key=KEY)
    rec = Recorder(app)
    try:
        with TestClient(rec, base_url="http://testserver") as http:
            policy = RetryPolicy(sleep=lambda s: None)
            yield RecordServiceClient(http, "http://testserver", Secret(key), retry=policy), rec
    finally:
        app.state.store.close()


def contacts(n: int, invalid: tuple[int, ...] = (), prefix: str = "c") -> list[PreparedRow]:
    rows = []
    for i in range(n):
        src = SourceRow("contacts.csv", i + 2, {"Email": f"{prefix}{i}@x.example"})
        if i in invalid:
            rows.append(PreparedRow(src, RowStatus.INVALID, error="bad email"))
            continue
        payload = {"name": f"Person {i}", "fields": {"email": f"{prefix}{i}@x.example"}}
        rows.append(PreparedRow(src, RowStatus.VALID, payload))
    return rows


def plan(name: str, object_type: str, rows: list[PreparedRow]) -> StepPlan:
    return StepPlan(name, f"configs/{name}.yaml", object_type, lambda: iter(rows))


def run(
    tmp_path: Path, plans: list[StepPlan], client: RecordServiceClient | None, **kw: Any
) -> Any:
    options = kw.pop("options", SendOptions(100, 10))
    return run_plans(
        plans,
        pipeline="test",
        report_root=tmp_path / "reports",
        options=options,
        client=client,
        **kw,
    )


def test_rows_go_in_chunks_after_a_canary_and_the_report_matches_the_sandbox(
    tmp_path: Path,
) -> None:
    with sandbox(tmp_path) as (client, rec):
        result = run(
            tmp_path, [plan("contacts", "contacts", contacts(252, invalid=(5, 77)))], client
        )
        posts = [c for c in rec.calls if c[0] == "POST"]
        held = list(client.list_records("contacts"))
    step = result.summary["steps"][0]
    assert (step["rows_read"], step["rows_invalid"], step["rows_sent"], step["created"]) == (
        252,
        2,
        250,
        250,
    )
    assert step["chunks"] == len(posts) == 4  # 10 + 100 + 100 + 40
    assert len(held) == 250 and len({r["email"] for r in held}) == 250
    assert result.summary["accounting_ok"] and result.exit_code == 1  # invalid rows


def test_second_run_updates_instead_of_creating(tmp_path: Path) -> None:
    with sandbox(tmp_path) as (client, _):
        run(tmp_path, [plan("contacts", "contacts", contacts(30))], client)
        again = run(tmp_path, [plan("contacts", "contacts", contacts(30))], client)
        held = list(client.list_records("contacts"))
    assert again.summary["totals"]["updated"] == 30 and len(held) == 30
    assert again.exit_code == 0


def test_dry_run_sends_no_write_and_reports_valid_rows(tmp_path: Path) -> None:
    with sandbox(tmp_path) as (client, rec):
        result = run(
            tmp_path,
            [plan("contacts", "contacts", contacts(25, invalid=(3,)))],
            None,
            options=SendOptions(100, None, dry_run=True),
        )
        assert list(client.list_records("contacts")) == []
    assert not [c for c in rec.calls if c[0] != "GET"]
    s = result.summary
    assert s["dry_run"] is True and s["accounting_ok"] is True
    assert (s["totals"]["rows_sent"], s["totals"]["rows_invalid"], s["totals"]["created"]) == (
        24,
        1,
        0,
    )
    statuses = (result.report_dir / "results.csv").read_text().count(",valid,")
    assert statuses == 24


def bad_deals(n: int) -> list[PreparedRow]:
    return [
        PreparedRow(
            SourceRow("deals.parquet", i + 1, {}),
            RowStatus.VALID,
            {"name": f"D{i}", "fields": {"stage": "nope"}},
        )
        for i in range(n)
    ]


def test_failure_rate_breaker_stops_the_run_and_counts_rows_not_sent(tmp_path: Path) -> None:
    with sandbox(tmp_path) as (client, rec):
        result = run(
            tmp_path,
            [plan("deals", "deals", bad_deals(120)), plan("contacts", "contacts", contacts(15))],
            client,
            limits=RunLimits(max_failure_rate=0.5, breaker_min_rows=10),
        )
        posts = [c for c in rec.calls if c[0] == "POST"]
        assert list(client.list_records("contacts")) == []
    assert isinstance(result.error, RunAborted) and result.exit_code == 3
    deals, contacts_step = result.summary["steps"]
    assert len(posts) == 1  # only the canary chunk went out
    assert (deals["rows_read"], deals["rows_sent"], deals["failed"], deals["not_sent"]) == (
        120,
        10,  # the canary chunk: the 110 rows not sent are not counted as sent
        120,
        110,
    )
    assert (contacts_step["rows_read"], contacts_step["failed"], contacts_step["not_sent"]) == (
        15,
        15,
        15,
    )
    assert result.summary["accounting_ok"] is True
    text = (result.report_dir / "results.csv").read_text()
    assert "not sent: run aborted: circuit breaker" in text


def test_max_creates_breaker(tmp_path: Path) -> None:
    with sandbox(tmp_path) as (client, _):
        result = run(
            tmp_path,
            [plan("contacts", "contacts", contacts(200))],
            client,
            limits=RunLimits(max_creates=50),
        )
    assert isinstance(result.error, RunAborted)
    t = result.summary["totals"]
    assert (t["created"], t["not_sent"], t["rows_read"]) == (110, 90, 200)
    assert result.summary["accounting_ok"]


def test_wrong_key_aborts_everything_and_reports_every_row(tmp_path: Path) -> None:
    with sandbox(tmp_path, key="sk_live_wrong") as (client, _):
        result = run(
            tmp_path,
            [plan("a", "contacts", contacts(20)), plan("b", "deals", bad_deals(5))],
            client,
        )
    assert isinstance(result.error, AuthError) and result.exit_code == 3
    assert result.summary["totals"]["failed"] == 25
    assert result.summary["accounting_ok"]
    for path in result.report_dir.iterdir():
        assert "sk_live_wrong" not in path.read_text()


def test_unknown_object_type_stops_only_its_step(tmp_path: Path) -> None:
    with sandbox(tmp_path) as (client, _):
        result = run(
            tmp_path,
            [plan("t", "tickets", bad_deals(3)), plan("c", "contacts", contacts(4))],
            client,
        )
    assert isinstance(result.error, ObjectTypeNotFound) and result.exit_code == 3
    tickets, cs = result.summary["steps"]
    assert tickets["failed"] == 3 and tickets["aborted"]
    assert cs["created"] == 4


def test_run_with_a_real_run_needs_a_client(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        run(tmp_path, [], None)


def fake(handler: Any) -> RecordServiceClient:
    import httpx

    http = httpx.Client(transport=httpx.MockTransport(handler))
    policy = RetryPolicy(sleep=lambda s: None)
    return RecordServiceClient(http, "https://crm.example", Secret(KEY), retry=policy)


def test_redirect_on_batch_aborts_the_run_with_exit_3(tmp_path: Path) -> None:
    import httpx

    client = fake(lambda r: httpx.Response(307, headers={"location": "/login"}))
    result = run(tmp_path, [plan("c", "contacts", contacts(30))], client)
    assert isinstance(result.error, AuthError) and result.exit_code == 3
    assert "HTTP 307" in str(result.error) and "/login" not in str(result.error)
    assert result.summary["totals"]["failed"] == 30 and result.summary["accounting_ok"]


def test_answers_that_do_not_add_up_leave_rows_in_doubt_and_exit_1(tmp_path: Path) -> None:
    import json

    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        n = len(json.loads(request.content)["objects"])
        results = [{"id": i + 1, "status": "created", "extra": "ignored"} for i in range(n)]
        summary = {"total": n, "created": n - 1, "updated": 1, "failed": 0}  # lies
        return httpx.Response(200, json={"results": results, "summary": summary, "v": 2})

    result = run(tmp_path, [plan("c", "contacts", contacts(15))], fake(handler))
    step = result.summary["steps"][0]
    assert (step["in_doubt"], step["unreconciled_chunks"]) == (15, 2)
    assert result.exit_code == 1 and result.error is None
    md = (result.report_dir / "report.md").read_text()
    assert "2 chunk(s) unreconciled" in md


def test_each_chunk_is_on_the_wire_before_the_previous_one_is_reported(tmp_path: Path) -> None:
    """Over a socket, the runner reports (and journals) the answered chunk only once the next
    chunk's request is written, so that its work overlaps the service's time and does not
    hold up the sender thread; without trace events (the in-process client of the other
    tests) it does not wait.

    Checked by order only: the second chunk is held back before it is written until the first
    one is reported, or for a moment. A runner that waits reports chunk 1 after that moment
    whatever the load; one that does not reports it while chunk 2 is held."""
    import threading

    import httpx

    from recordsync.sandbox.server import run_in_thread

    events: list[str] = []
    first_reported = threading.Event()

    class Traced(RecordServiceClient):
        """Notes when each chunk's request is written (the runner builds each chunk's first
        request ahead, with the callback in it; a resend would go through batch_once)."""

        def build_batch(self, object_type: str, body: bytes, on_sent: Any = None) -> Any:
            name = json.loads(body)["objects"][0]["name"]

            def sent() -> None:
                events.append(f"on wire {name}")
                if on_sent is not None:
                    on_sent()

            return super().build_batch(object_type, body, sent)

    class HoldSecond(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if b'"Person 10"' in request.read():
                first_reported.wait(0.5)
            return super().handle_request(request)

    class Progress:
        def step_started(self, plan: Any) -> None: ...
        def chunk_done(self, step: str, report: Any) -> None: ...
        def step_finished(self, tally: Any) -> None: ...
        def rows_done(self, count: int) -> None:
            events.append(f"reported {count}")
            first_reported.set()

    app = create_app(tmp_path / "s.db", api_key=KEY)
    try:
        with run_in_thread(app) as url, httpx.Client(transport=HoldSecond()) as http:
            client = Traced(http, url, Secret(KEY), retry=RetryPolicy(sleep=lambda s: None))
            rows = contacts(40)
            result = run(
                tmp_path,
                [plan("contacts", "contacts", rows)],
                client,
                options=SendOptions(10, 10),
                progress=Progress(),
            )
    finally:
        app.state.store.close()
    assert result.summary["totals"]["created"] == 40 and result.summary["accounting_ok"]
    wire = [e for e in events if e.startswith("on wire")]
    assert wire == [f"on wire Person {n}" for n in (0, 10, 20, 30)]
    reports = [i for i, e in enumerate(events) if e.startswith("reported")]
    assert [events[i] for i in reports] == ["reported 10"] * 4
    for chunk in (1, 2, 3):  # chunk k is reported after chunk k + 1 is on the wire
        assert events.index(f"on wire Person {chunk * 10}") < reports[chunk - 1], events


def test_the_hook_hears_when_the_source_is_read_while_the_last_chunks_are_out(
    tmp_path: Path,
) -> None:
    """source_read comes once, after the last chunk is journaled and before the step ends
    (the state store writes its ledger then); a dry run sends nothing and never calls it."""
    from contextlib import nullcontext

    events: list[str] = []

    class Hook:
        gates_chunks = False

        def source(self, plan: StepPlan) -> Any:
            return plan.rows()

        def classify(self, plan: StepPlan, rows: Any) -> Any:
            return rows

        def record_id_of(self, row: PreparedRow) -> None:
            return None

        def begin(self, plan: StepPlan, chunk_no: int, rows: Any) -> None:
            events.append(f"begin {chunk_no}")

        def ack(self, plan: StepPlan, chunk_no: int, rows: Any, results: Any) -> None:
            events.append(f"ack {chunk_no}")

        def source_read(self, plan: StepPlan) -> None:
            events.append("source read")

        def step_done(self, plan: StepPlan, tally: Any) -> None:
            events.append("done")

        def atomic(self) -> Any:
            return nullcontext()

        def clear(self, plan: StepPlan, chunk_nos: list[int]) -> None:
            raise AssertionError("a hook that does not gate chunks is never asked to clear")

        def other_owners(self, plan: StepPlan, pairs: Any) -> dict[int, list[str]]:
            return {}

        def ref_counts(self, step: str) -> dict[str, dict[str, Any]]:
            return {}

        def attempts(self) -> int:
            return 1

        def chunks_before(self, step: str) -> int:
            return 0

    with sandbox(tmp_path) as (client, _rec):
        result = run(
            tmp_path,
            [plan("contacts", "contacts", contacts(35))],
            client,
            options=SendOptions(10, 10),
            hook=Hook(),
        )
    assert result.summary["accounting_ok"]
    assert events.count("source read") == 1
    at = events.index("source read")
    assert events[at - 1] == "begin 4" and events[-1] == "done"
    assert sorted(e for e in events if e.startswith("ack")) == [f"ack {n}" for n in range(1, 5)]
    events.clear()
    run(
        tmp_path / "dry",
        [plan("contacts", "contacts", contacts(5))],
        None,
        options=SendOptions(10, 10, True),
        hook=Hook(),
    )
    assert "source read" not in events


def failing_source(rows: list[PreparedRow], error: Exception) -> StepPlan:
    """A step whose source raises ``error`` after yielding ``rows`` (a file unreadable
    part-way, e.g. a byte that is not UTF-8 past the part checked up front)."""

    def source() -> Iterator[PreparedRow]:
        yield from rows
        raise error

    return StepPlan("late", "configs/late.yaml", "contacts", source)


def test_a_source_error_after_a_send_is_an_abort_and_every_row_read_is_reported(
    tmp_path: Path,
) -> None:
    from recordsync.core.errors import EXIT_ABORTED, SourceError

    broken = SourceError("not valid UTF-8 text", file="late.csv", line=39001, key="source")
    with sandbox(tmp_path) as (client, _):
        result = run(
            tmp_path,
            [
                plan("first", "contacts", contacts(5)),
                failing_source(contacts(25, prefix="l"), broken),
                plan("never", "contacts", contacts(3, prefix="n")),
            ],
            client,
        )
        held = list(client.list_records("contacts"))
    assert isinstance(result.error, RunAborted) and result.exit_code == EXIT_ABORTED
    assert result.error.__cause__ is broken
    assert "late.csv:39001" in str(result.error) and "were sent" in str(result.error)
    first, late, never = result.summary["steps"]
    assert first["created"] == 5 and late["rows_read"] == 25 and never["rows_read"] == 3
    assert late["created"] + late["not_sent"] == 25 and late["created"] == len(held) - 5
    assert never["not_sent"] == 3 and result.summary["accounting_ok"]
    lines = (result.report_dir / "results.csv").read_text().splitlines()
    assert len(lines) == 1 + 5 + 25 + 3


def test_a_source_error_before_any_send_stays_a_config_error(tmp_path: Path) -> None:
    from recordsync.core.errors import EXIT_CONFIG, SourceError

    broken = SourceError("not valid UTF-8 text", file="late.csv", line=7, key="source")
    invalid = contacts(4, invalid=(0, 1, 2, 3))
    with sandbox(tmp_path) as (client, rec):
        result = run(
            tmp_path,
            [plan("first", "contacts", invalid), failing_source(contacts(8), broken)],
            client,
        )
        assert not [c for c in rec.calls if c[0] == "POST"]
    assert result.error is broken and result.exit_code == EXIT_CONFIG
    assert result.summary["accounting_ok"] and result.summary["totals"]["not_sent"] == 8
    dry = run(
        tmp_path / "dry",
        [plan("first", "contacts", contacts(30)), failing_source(contacts(8), broken)],
        None,
        options=SendOptions(10, None, dry_run=True),
    )
    assert dry.error is broken and dry.exit_code == EXIT_CONFIG


def test_an_accounting_mismatch_alone_exits_1(tmp_path: Path) -> None:
    """Every row ok, no error: a report that does not add up still makes the exit code 1."""
    from recordsync.run.runner import RunResult

    with sandbox(tmp_path) as (client, _):
        result = run(tmp_path, [plan("contacts", "contacts", contacts(3))], client)
    assert result.exit_code == 0 and result.summary["accounting_ok"]
    broken = {**result.summary, "accounting_ok": False}
    assert RunResult(broken, result.report_dir).exit_code == 1


def test_mirror_deletes_alone_count_as_sent() -> None:
    """Every row unchanged, but records were soft-deleted: a later source error is an abort."""
    from recordsync.core.errors import SourceError
    from recordsync.report.tally import StepTally
    from recordsync.run.runner import _after_sends

    broken = SourceError("not valid UTF-8 text", file="deals.csv", line=9)
    deleted = StepTally("contacts", "m", "contacts", deleted=2, delete_failed=1)
    stop = _after_sends(broken, [deleted, StepTally("deals", "m", "deals")], dry_run=False)
    assert isinstance(stop, RunAborted) and stop.__cause__ is broken
    assert str(stop).startswith(
        "run aborted after 0 chunk(s) and 3 mirror delete(s) were sent: deals.csv:9: not valid"
    )
    assert _after_sends(broken, [StepTally("deals", "m", "deals")], dry_run=False) is broken

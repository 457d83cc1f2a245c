"""Read-back verification against the real sandbox over loopback: records another writer
changed are mismatches (exit 1, readback_mismatches.csv), values the service normalises are
not, rows found unchanged are read back too (drift), and the limits and switches hold."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.support import all_records, loopback_client, served, target

from recordsync.config.after_run import VerifySettings
from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow, StepPlan
from recordsync.core.secret import Secret
from recordsync.report.tally import StepTally
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.verify import MISMATCH_FILE, ReadBack
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryPolicy

HEADER = "Name,Email,Phone,Signed,Tags,Score\n"


def write_pipeline(
    tmp: Path, rows: int, *, verify: str = "", mapping_verify: str = "", extra: str = ""
) -> Path:
    """A contacts pipeline of ``rows`` rows (one value of each kind the service normalises:
    an e-mail in capitals, a phone, a date-time with an offset and microseconds, tags)."""
    lines = [
        f"Person {i},Person.{i}@Example.COM,+1 (555) 010-{i:04d},"
        f"2026-01-02T03:04:05.123456+02:00,vip;partner,{i}.0\n"
        for i in range(rows)
    ]
    (tmp / "people.csv").write_text(HEADER + "".join(lines), encoding="utf-8")
    (tmp / "contacts.yaml").write_text(
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields:\n  email: Email\n  phone: Phone\n  signed_up_at: Signed\n"
        "  tags: {column: Tags, split: ';'}\n  lead_score: Score\n" + mapping_verify,
        encoding="utf-8",
    )
    path = tmp / "pipe.yaml"
    path.write_text(f"name: vt\nsteps: [contacts.yaml]\n{verify}{extra}", encoding="utf-8")
    return path


def request(tmp: Path, pipeline: Path, **kw: Any) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **kw,
    )


class OtherWriter:
    """A progress display that, as a step ends (before its read-back), PATCHes a record as
    another writer of the service would."""

    def __init__(self, url: str, change: dict[str, Any]) -> None:
        self.url, self.change = url, change
        self.patched: int | None = None

    def step_started(self, plan: StepPlan) -> None:
        pass

    def rows_done(self, count: int) -> None:
        pass

    def chunk_done(self, step: str, report: Any) -> None:
        pass

    def step_finished(self, tally: StepTally) -> None:
        with loopback_client(self.url) as client:
            first = next(iter(client.list_records("contacts", page_size=1)))
            client.request(
                "PATCH", "/api/objects/contacts", json={"id": first["id"], **self.change}
            )
            self.patched = int(first["id"])


def mismatches(report_dir: Path) -> list[dict[str, str]]:
    with open(report_dir / MISMATCH_FILE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_record_another_writer_changed_is_a_mismatch_and_exit_1(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, 5, verify="verify: {sample: 10}\n")
    with served(tmp_path / "s.db") as url:
        other = OtherWriter(url, {"fields": {"phone": "+44 20 7946 0000"}})
        result = run_pipeline(request(tmp_path, pipeline), target=target(url), progress=other)
    verify = result.summary["verify"]
    assert result.summary["totals"]["rows_not_ok"] == 0  # every row was answered created
    assert verify["records_read"] == 5 and verify["requests"] == 5
    assert verify["mismatched_records"] == 1 and verify["failed"] is True
    assert result.exit_code == 1
    (line,) = mismatches(result.report_dir)
    assert line["record_id"] == str(other.patched) and line["field"] == "phone"
    assert line["status"] == "created" and line["stored"] == '"+44 20 7946 0000"'
    assert json.loads(line["sent"]).startswith("+1 (555) 010-")
    report = (result.report_dir / "report.md").read_text(encoding="utf-8")
    assert "## Read-back" in report and "phone: sent" in report
    summary = json.loads((result.report_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["verify"]["file"] == MISMATCH_FILE


UNNORMALISED = {
    "email": "  PERSON.{i}@Example.COM ",
    "phone": " +1 (555) 010-{i:04d} ",
    "signed_up_at": "2026-01-02T03:04:05.123456+02:00",
    "lead_score": 7.0,
}
"""Values as another client could send them, which the service stores normalised (the
contract: e-mails trimmed and lower-cased; date-times in UTC with milliseconds)."""


def unnormalised(plan: StepPlan) -> StepPlan:
    """The plan with each row's values sent as :data:`UNNORMALISED` says."""

    def rows() -> Iterator[PreparedRow]:
        for row in plan.rows():
            if row.payload is not None and row.status is RowStatus.VALID:
                i = int(row.payload["name"].split()[-1])
                fields = {
                    k: v.format(i=i) if isinstance(v, str) else v for k, v in UNNORMALISED.items()
                }
                row.payload = {**row.payload, "fields": {**row.payload["fields"], **fields}}
                row.encoded = None
            yield row

    return dataclasses.replace(plan, rows=rows, digested=None)


def test_values_the_service_normalises_are_not_mismatches(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, 3)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(
            request(tmp_path, pipeline, state=False), target=target(url), wrap=unnormalised
        )
        stored = {r["name"]: r for r in all_records(url, "contacts")}
    # the service stored other text than was sent (its normalisations) ...
    record = stored["Person 1"]
    assert record["email"] == "person.1@example.com"
    assert record["signed_up_at"] == "2026-01-02T01:04:05.123Z"
    assert record["phone"] == "+1 (555) 010-0001" and record["lead_score"] == 7
    # ... and the read-back takes it for what was sent
    verify = result.summary["verify"]
    assert result.summary["totals"]["created"] == 3
    assert verify["records_read"] == 3 and verify["mismatched_records"] == 0
    assert result.exit_code == 0 and not (result.report_dir / MISMATCH_FILE).exists()


def test_rows_found_unchanged_are_read_back_and_a_change_is_found(tmp_path: Path) -> None:
    """The second nightly run finds every row unchanged (from its digest, nothing mapped nor
    sent); another writer edits a record while the step runs: the read-back of the rows
    found unchanged maps them again and finds the record no longer holds their values."""
    pipeline = write_pipeline(tmp_path, 6, verify="verify: {sample: 12}\n")
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        other = OtherWriter(url, {"fields": {"tags": ["vip"]}})
        second = run_pipeline(request(tmp_path, pipeline), target=target(url), progress=other)
    assert first.exit_code == 0 and first.summary["verify"]["records_read"] == 6
    assert second.summary["totals"]["rows_unchanged"] == 6  # nothing was sent
    step = second.summary["verify"]["steps"][0]
    assert step["unchanged_read"] == 6 and step["written_read"] == 0
    assert step["mismatched_records"] == 1 and second.exit_code == 1
    (line,) = mismatches(second.report_dir)
    assert line["status"] == "unchanged" and line["record_id"] == str(other.patched)
    assert line["field"] == "tags" and line["stored"] == '["vip"]'
    assert line["sent"] == '["vip", "partner"]'


def test_max_mismatch_allows_some_and_the_mapping_overrides_the_pipeline(tmp_path: Path) -> None:
    pipeline = write_pipeline(
        tmp_path,
        4,
        verify="verify: {sample: 1, max_mismatch: 0}\n",
        mapping_verify="verify: {sample: 4, max_mismatch: 1}\n",
    )
    with served(tmp_path / "s.db") as url:
        other = OtherWriter(url, {"name": "Someone Else"})
        result = run_pipeline(request(tmp_path, pipeline), target=target(url), progress=other)
    step = result.summary["verify"]["steps"][0]
    assert step["records_read"] == 4 and step["max_mismatch"] == 1
    assert step["mismatched_records"] == 1 and not step["failed"]
    assert result.exit_code == 0  # one mismatch allowed: reported, not failed
    assert [m["field"] for m in mismatches(result.report_dir)] == ["name"]


def test_no_verify_reads_nothing_back(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, 3)
    with served(tmp_path / "s.db") as url:
        other = OtherWriter(url, {"name": "Someone Else"})
        result = run_pipeline(
            request(tmp_path, pipeline, verify=False), target=target(url), progress=other
        )
    assert result.summary["verify"] == {"enabled": False, "why": "--no-verify"}
    assert result.exit_code == 0


def test_a_record_deleted_since_is_a_mismatch(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, 2)

    class Deleter(OtherWriter):
        def step_finished(self, tally: StepTally) -> None:
            with loopback_client(self.url) as client:
                first = next(iter(client.list_records("contacts", page_size=1)))
                client.delete("contacts", int(first["id"]))

    with served(tmp_path / "s.db") as url:
        result = run_pipeline(
            request(tmp_path, pipeline), target=target(url), progress=Deleter(url, {})
        )
    (line,) = mismatches(result.report_dir)
    assert line["field"] == "(record)" and "not found" in line["stored"]
    assert result.exit_code == 1


@pytest.mark.parametrize("quirks", ["hosted"])
def test_read_back_copes_with_the_hosted_services_answers(tmp_path: Path, quirks: str) -> None:
    """Record ids as strings and extra keys on every record: no mismatch, nothing unreadable."""
    pipeline = write_pipeline(tmp_path, 3)
    with served(tmp_path / "s.db", quirks=quirks) as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
    verify = result.summary["verify"]
    assert verify["records_read"] == 3 and verify["unreadable"] == 0
    assert verify["mismatched_records"] == 0 and result.exit_code == 0


def test_a_record_that_cannot_be_read_is_unreadable_not_a_mismatch() -> None:
    """A service whose fetch by id keeps failing (which the sandbox does not do while its
    list works): the record is counted unreadable, a warning; the run is not failed."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"error": "Service unavailable"})

    http = httpx.Client(transport=httpx.MockTransport(answer))
    client = RecordServiceClient(
        http, "http://svc", Secret("k"), retry=RetryPolicy(sleep=lambda s: None, max_attempts=2)
    )
    readback = ReadBack(client, {"s": VerifySettings(sample=5)}, None)
    sent = PreparedRow(SourceRow("f.csv", 2, {}), RowStatus.VALID, {"name": "a"})
    readback.watch.settled("s", [sent], [EntryResult(RowStatus.CREATED, 1)], None)
    check = readback.after_step(StepPlan("s", "s.yaml", "contacts", lambda: []))
    assert check is not None and check.unreadable == 1 and check.mismatched == 0
    assert "HTTP 503" in check.problems[0] and not readback.failed
    assert readback.requests == 2  # the client's retries

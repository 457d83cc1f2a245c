"""The step runner takes a stream of lists (a prepared slice at a time) in C: the same chunks,
the same report and the same stops as taking the same rows one by one."""

from __future__ import annotations

import csv
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.send.support import BASE, policy, sandbox_client

from recordsync.core.model import Blocks, PreparedRow, RowStatus, SourceRow, StepPlan
from recordsync.core.secret import Secret
from recordsync.run.runner import run_plans
from recordsync.send import step as step_module
from recordsync.send.client import RecordServiceClient
from recordsync.send.step import SendOptions

KINDS = st.sampled_from(["valid", "valid", "valid", "invalid", "empty"])


def rows_of(kinds: list[str]) -> list[PreparedRow]:
    """Fresh rows (the runner marks a valid row without a batch input invalid)."""
    out = []
    for i, kind in enumerate(kinds):
        src = SourceRow("people.csv", i + 2, {"Email": f"p{i}@x.example"})
        if kind == "invalid":
            out.append(PreparedRow(src, RowStatus.INVALID, error="bad email"))
            continue
        payload = {"name": f"P {i}", "fields": {"email": f"p{i}@x.example"}}
        out.append(PreparedRow(src, RowStatus.VALID, payload if kind == "valid" else {}))
    return out


def split(rows: list[PreparedRow], cuts: list[int]) -> list[list[PreparedRow]]:
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    return [rows[a:b] for a, b in pairwise(bounds)]


def run_once(tmp: Path, client: RecordServiceClient, plan: StepPlan, chunks: list[Any]) -> Any:
    original = step_module.StepRunner._advance

    def spy(self: Any, tally: Any, sender: Any, pool: Any, buffer: list[Any]) -> None:
        chunks.append([(r.source.source_row, str(r.status)) for r in buffer])
        original(self, tally, sender, pool, buffer)

    step_module.StepRunner._advance = spy  # type: ignore[method-assign]
    try:
        return run_plans(
            [plan],
            pipeline="t",
            report_root=tmp / "reports",
            options=SendOptions(7, 3),
            client=client,
        )
    finally:
        step_module.StepRunner._advance = original  # type: ignore[method-assign]


def results(result: Any) -> list[tuple[str, ...]]:
    with open(result.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return [(r["source_row"], r["status"], r["error"]) for r in csv.DictReader(f)]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(KINDS, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    flush=st.integers(1, 12),
)
def test_lists_make_the_chunks_and_the_report_of_rows_one_by_one(
    tmp_path_factory: Any, kinds: list[str], cuts: list[int], flush: int
) -> None:
    tmp = tmp_path_factory.mktemp("blocks")
    old = step_module.sizes.STEP_FLUSH_ROWS
    step_module.sizes.STEP_FLUSH_ROWS = flush  # rows of any kind also fill a chunk
    try:
        seen: dict[str, list[Any]] = {"rows": [], "lists": []}
        got = {}
        for how in ("rows", "lists"):
            rows = rows_of(kinds)
            make = (
                (lambda r=rows: iter(r))
                if how == "rows"
                else (lambda r=rows: Blocks(iter(split(r, cuts))))
            )
            with sandbox_client(tmp / how) as (client, _app):
                result = run_once(
                    tmp / how, client, StepPlan("p", "p.yaml", "contacts", make), seen[how]
                )
            got[how] = (results(result), result.summary["steps"][0]["rows_read"], result.exit_code)
    finally:
        step_module.sizes.STEP_FLUSH_ROWS = old
    assert seen["lists"] == seen["rows"]
    assert got["lists"] == got["rows"]
    assert got["lists"][1] == len(kinds)


def test_a_stop_in_the_middle_of_a_list_still_reports_its_other_rows(tmp_path: Path) -> None:
    """A refused key stops the step at its first chunk: every row of the list being taken
    and of the lists after it is reported (not sent), none lost."""
    rows = rows_of(["valid"] * 40)
    plan = StepPlan("p", "p.yaml", "contacts", lambda: Blocks(iter([rows[:25], rows[25:]])))
    with sandbox_client(tmp_path) as (good, _app):
        bad = RecordServiceClient(
            good.http, BASE, Secret("sk_live_wrong_key_0000000000"), retry=policy()
        )
        result = run_once(tmp_path, bad, plan, [])
    lines = results(result)
    assert [int(r[0]) for r in lines] == [r.source.source_row for r in rows]
    assert result.summary["steps"][0]["rows_read"] == 40
    assert result.summary["accounting_ok"]

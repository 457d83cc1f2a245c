"""The end of a run's output: a short summary, then one line, the verdict, naming the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recordsync.core.model import RowStatus
from recordsync.report.console import render_console, verdict
from recordsync.report.tally import StepTally

from .support import summary_of

DIR = Path("reports/r1")


def _tally(**outcomes: int) -> StepTally:
    t = StepTally("contacts", "contacts.yaml", "contacts")
    for status, n in outcomes.items():
        t.outcomes[RowStatus(status)] += n
    t.read = sum(outcomes.values())
    t.sent = sum(n for s, n in outcomes.items() if s in ("created", "updated", "failed"))
    return t


def test_the_verdict_counts_the_rows_not_ok_of_all_rows_read() -> None:
    summary: dict[str, Any] = summary_of([_tally(created=984, invalid=16, duplicate=1)])
    assert verdict(summary, DIR) == (
        "17 of 1,001 rows not ok (16 invalid, 1 duplicate): see reports/r1/report.md"
    )
    assert verdict({**summary, "dry_run": True}, DIR).startswith("dry run: 17 of 1,001 rows")
    assert verdict(summary, DIR, stopped=True).startswith("run stopped: 17 of 1,001 rows")
    empty: dict[str, Any] = summary_of([])
    assert verdict({**empty, "dry_run": True}, DIR, stopped=True) == (
        "dry run stopped: no row read: see reports/r1/report.md"
    )


def test_the_verdict_of_a_run_whose_rows_are_all_ok() -> None:
    summary: dict[str, Any] = summary_of([_tally(created=1200, updated=34)])
    assert verdict(summary, DIR) == "all 1,234 rows ok: reports/r1/report.md"
    summary["totals"]["delete_failed"] = 2
    assert verdict(summary, DIR) == (
        "all 1,234 rows ok, but 2 mirror deletes failed: see reports/r1/report.md"
    )
    mismatch = {**summary, "accounting_ok": False}
    assert "does not add up" in verdict(mismatch, DIR)


def test_the_summary_is_short_and_names_each_step_and_the_largest_groups() -> None:
    t = _tally(created=90, invalid=10)
    for i in range(10):  # ten reason groups, one row each
        t.add_reason(f"column 'C{i}' → field 'f{i}': is required, but the value is empty")
    text = render_console(summary_of([t]), [t], DIR)
    lines = text.splitlines()
    assert lines[1] == "  contacts: read 100 (90 created, 10 invalid)"
    assert "(10 reason(s); the 5 largest here, every one in report.md):" in text
    assert sum(line.startswith("    → ") for line in lines) == 5
    assert len(lines) < 20

"""Merged and duplicate rows in the accounting and in the count that decides exit 0."""

from __future__ import annotations

from pathlib import Path

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter


def row(n: int, status: RowStatus) -> PreparedRow:
    return PreparedRow(SourceRow("in.csv", n, {"Name": f"R{n}"}), status, {"name": f"R{n}"})


def test_held_and_sent_merges_add_up_and_count_against_exit_0(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("companies", "companies.yaml", "companies")
    writer.start_step(tally)
    tally.read, tally.sent = 4, 2
    writer.record(tally, row(2, RowStatus.VALID), RowStatus.CREATED, 7)
    writer.record(tally, row(3, RowStatus.VALID), RowStatus.MERGED, 7, "merged: on record 7")
    held = row(4, RowStatus.MERGED)
    writer.record(tally, held, RowStatus.MERGED, None, "merges with row 2: ...")
    writer.record(tally, row(5, RowStatus.DUPLICATE), RowStatus.DUPLICATE, None, "duplicate")
    summary = writer.finish({})
    step = summary["steps"][0]
    assert summary["accounting_ok"], summary["accounting_errors"]
    assert (step["rows_merged"], step["merged"], step["created"]) == (1, 1, 1)
    assert step["rows_not_ok"] == 3  # two merged, one duplicate
    failures = (tmp_path / "run" / "failures.csv").read_text(encoding="utf-8")
    assert failures.count("merged") >= 2 and "duplicate" in failures


def test_duplicates_declared_expected_do_not_count_against_exit_0() -> None:
    tally = StepTally("c", "c.yaml", "contacts", read=2, sent=1, duplicates_expected=True)
    tally.outcomes[RowStatus.CREATED] = 1
    tally.outcomes[RowStatus.DUPLICATE] = 1
    assert tally.not_ok() == 0 and not tally.accounting_errors(dry_run=False)
    tally.duplicates_expected = False
    assert tally.not_ok() == 1

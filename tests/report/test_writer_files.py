"""The report files themselves: where they go, what summary.json holds, failures.csv's cells
and its own column names."""

from __future__ import annotations

import csv
import errno
import json
from pathlib import Path

import pytest

from recordsync.core.errors import RunAborted
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter, failure_extra


def failing(n: int, **values: str) -> PreparedRow:
    return PreparedRow(SourceRow("in.csv", n, values), RowStatus.INVALID)


def test_the_report_directory_is_made_new_with_its_parents(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "nightly" / "r1"
    writer = ReportWriter(out, dry_run=True)
    assert (out / "results.csv").exists() and (out / ".failures.jsonl").exists()
    writer.finish({})
    assert sorted(p.name for p in out.iterdir()) == [
        "failures.csv",
        "report.html",
        "report.md",
        "results.csv",
        "summary.json",
    ]
    with pytest.raises(FileExistsError):
        ReportWriter(out, dry_run=True)  # a run never writes into another's report


@pytest.mark.parametrize("dry_run", [True, False])
def test_summary_json_as_written(tmp_path: Path, dry_run: bool) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=dry_run)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    tally.read = tally.sent = 1  # a dry run's valid row is its "sent" one
    row = PreparedRow(SourceRow("in.csv", 2, {}), RowStatus.VALID, {"name": "A"})
    writer.record(tally, row, RowStatus.VALID if dry_run else RowStatus.CREATED, 1)
    summary = writer.finish({"run_id": "r1", "target": "é", "attempts": 3})
    assert summary["accounting_ok"] and summary["steps"][0]["accounting_ok"]
    text = (tmp_path / "run" / "summary.json").read_text(encoding="utf-8")
    assert text == json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    assert summary["dry_run"] is dry_run and summary["steps"][0]["attempts"] == 3
    assert summary["steps"][0] == {**tally.as_json(dry_run), "attempts": 3}
    again = ReportWriter(tmp_path / "again", dry_run=dry_run)
    again.start_step(StepTally("contacts", "m", "contacts"))
    assert again.finish({})["steps"][0]["attempts"] == 1


def test_failures_csv_leaves_a_cell_empty_where_a_row_has_no_such_column(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record(tally, failing(2, A="1"), RowStatus.INVALID, None, "bad")
    writer.record(tally, failing(3, B="2"), RowStatus.INVALID, None, "bad")
    writer.finish({})
    with open(tmp_path / "run" / "failures.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert [r[:2] for r in rows] == [["A", "B"], ["1", ""], ["", "2"]]


def test_failures_csv_columns_step_aside_from_source_columns() -> None:
    assert failure_extra(["Name"]) == ("_error", "_step", "_source_row", "_status", "_source_file")
    assert failure_extra(["_status"])[0] == "__error"
    assert failure_extra(["_error", "__step"])[0] == "___error"


def test_a_full_disk_names_the_report_directory(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)

    class Full:
        closed = False

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self) -> None:
            raise OSError(errno.EIO, "Input/output error")

    for guarded in (writer._results_file, writer._spool):
        guarded._file.close()
        guarded._file = Full()  # type: ignore[assignment]
        where = f"^cannot write the report in {tmp_path / 'run'}: "
        with pytest.raises(RunAborted, match=where + "No space left"):
            guarded.write("x")
        with pytest.raises(RunAborted, match=where + "Input/output error"):
            guarded.close()

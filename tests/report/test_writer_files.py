"""The report files themselves: where they go, what summary.json holds, failures.csv's cells
and its own column names."""

from __future__ import annotations

import csv
import errno
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_summary_json_names_the_row_files(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record(tally, failing(2, A="1"), RowStatus.INVALID, None, "bad")
    files = {"results": "results.csv", "results_lines": 1, "unchanged_listed": False}
    files["failures"] = "failures.csv"
    assert writer.finish({})["files"] == files
    text = (tmp_path / "run" / "summary.json").read_text(encoding="utf-8")
    assert json.loads(text)["files"] == files
    listed = ReportWriter(tmp_path / "listed", dry_run=False, list_unchanged=True)
    assert listed.finish({})["files"]["unchanged_listed"] is True


def test_summary_json_replaces_a_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """summary.json appears whole: written as summary.json.tmp, then renamed."""
    replaced: list[tuple[str, str]] = []
    real = os.replace

    def replace(src: Any, dst: Any) -> None:
        replaced.append((str(src), str(dst)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    ReportWriter(tmp_path / "run", dry_run=False).finish({})
    run = tmp_path / "run"
    assert replaced == [(str(run / "summary.json.tmp"), str(run / "summary.json"))]


@pytest.mark.parametrize(("failures", "name"), [(2, "failures.csv"), (3, "failures.csv.gz")])
def test_failures_csv_is_compressed_past_the_threshold(
    tmp_path: Path, failures: int, name: str
) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False, gzip_from=2)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    for n in range(failures):
        writer.record(tally, failing(n + 2, A=str(n)), RowStatus.INVALID, None, "bad")
    assert writer.finish({})["files"]["failures"] == name
    opener = gzip.open if name.endswith(".gz") else open
    with opener(tmp_path / "run" / name, "rt", newline="", encoding="utf-8") as f:
        assert [r[0] for r in csv.reader(f)] == ["A", *map(str, range(failures))]


@pytest.mark.parametrize(("rows", "name"), [(2, "results.csv"), (3, "results.csv.gz")])
def test_results_csv_is_compressed_past_the_writers_threshold(
    tmp_path: Path, rows: int, name: str
) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=True, gzip_from=2)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    for n in range(rows):
        row = PreparedRow(SourceRow("in.csv", n + 2, {}), RowStatus.VALID, {"name": "A"})
        writer.record(tally, row, RowStatus.VALID)
    assert writer.finish({})["files"]["results"] == name


WRITE_UNDER_AN_ASCII_LOCALE = r"""
from pathlib import Path
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter

writer = ReportWriter(Path(OUT), dry_run=False)  # OUT: set by whoever runs it
tally = StepTally("contacts", "m", "contacts")
writer.start_step(tally)
row = PreparedRow(SourceRow("in.csv", 2, {"Name": "Zo\u00eb"}), RowStatus.INVALID)
writer.record(tally, row, RowStatus.INVALID, None, "na\u00efve value 'Zo\u00eb'")
writer.finish({"target": "cr\u00e8me"})
"""


def test_report_files_are_utf_8_whatever_the_locale(tmp_path: Path) -> None:
    """Under a locale whose encoding is ASCII (no UTF-8 mode), non-ASCII rows, errors and
    names still reach every report file, as UTF-8: the same bytes as written here."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    env["PYTHONCOERCECLOCALE"] = "0"  # else Python itself switches a C locale to UTF-8
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("PYTHONIOENCODING", None)
    probe = [sys.executable, "-c", "import locale; print(locale.getencoding())"]
    assert subprocess.run(probe, env=env, capture_output=True, text=True).stdout.strip() in (
        "ANSI_X3.4-1968",
        "ascii",
        "US-ASCII",
    )  # the locale this test means (the mutants it kills need it)
    here, there = tmp_path / "here", tmp_path / "c-locale"
    exec(WRITE_UNDER_AN_ASCII_LOCALE, {"OUT": str(here)})  # here, in this process
    done = subprocess.run(
        [sys.executable, "-c", f"OUT = {str(there)!r}\n{WRITE_UNDER_AN_ASCII_LOCALE}"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    failures = (there / "failures.csv").read_bytes().decode("utf-8")
    assert "Zoë" in failures and "naïve value" in failures
    for name in ("failures.csv", "summary.json", "report.md", "report.html"):
        assert (there / name).read_bytes() == (here / name).read_bytes(), name
        assert "crème" in (there / name).read_bytes().decode("utf-8") or name == "failures.csv"

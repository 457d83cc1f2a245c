"""``recordsync run``'s exit code tells the truth: 2 only when nothing was sent, 3 when an
error stops a run after something was sent, 1 when the report does not add up."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recordsync.read.csv_reader import CHECK_BLOCK_SIZE

PIPELINE = """\
name: twostep
steps:
  - people.yaml
  - more.yaml
report:
  directory: reports
send:
  chunk_size: 10
"""
MAPPING = """\
object_type: contacts
source:
  path: {file}
name:
  template: "{{Name}}"
match_by: [email]
fields:
  email: Email
"""


def write_project(root: Path, *, bad_byte: bool) -> Path:
    """Two steps of contacts; the second's file has a large unmapped column, so that a byte
    that is not UTF-8 near its end lies past what is checked before the first send."""
    (root / "people.yaml").write_text(MAPPING.format(file="people.csv"), encoding="utf-8")
    (root / "more.yaml").write_text(MAPPING.format(file="more.csv"), encoding="utf-8")
    (root / "run.yaml").write_text(PIPELINE, encoding="utf-8")
    people = "".join(f"Person {i},p{i}@x.example\n" for i in range(12))
    (root / "people.csv").write_text("Name,Email\n" + people, encoding="utf-8")
    filler = "f" * (CHECK_BLOCK_SIZE // 8)
    lines = [f"More {i},m{i}@x.example,{filler}\n".encode() for i in range(10)]
    last = b"Last \xff,last@x.example,tail\n" if bad_byte else b"Last,last@x.example,tail\n"
    (root / "more.csv").write_bytes(b"Name,Email,Filler\n" + b"".join(lines) + last)
    return root / "run.yaml"


def report_dirs(root: Path) -> list[Path]:
    return [p for p in (root / "reports").iterdir() if p.is_dir()]


def only_report(root: Path) -> Path:
    (found,) = report_dirs(root)
    return found


@pytest.mark.parametrize("state", [[], ["--no-state"]], ids=["state", "no-state"])
def test_a_source_error_after_the_first_send_aborts_with_exit_3_and_a_full_report(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int], state: list[str]
) -> None:
    pipeline = write_project(project, bad_byte=True)
    code = cli("run", str(pipeline), "--quiet", *state)
    err = capsys.readouterr().err
    assert code == 3, err
    assert "more.csv" in err and "not UTF-8" in err
    report = only_report(project)
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    people, more = summary["steps"]
    assert people["created"] == 12
    assert summary["accounting_ok"], summary["accounting_errors"]
    assert summary["aborted"] and "more.csv" in summary["aborted"]
    with open(report / "results.csv", newline="", encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert [r["status"] for r in lines if r["step"] == "people"] == ["created"] * 12
    assert len(lines) == 12 + more["rows_read"]


def test_the_same_error_with_nothing_sent_is_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    pipeline = write_project(project, bad_byte=True)
    assert cli("run", str(pipeline), "--quiet", "--dry-run") == 2
    assert "more.csv" in capsys.readouterr().err
    first_only = pipeline.read_text().replace("  - people.yaml\n", "")
    pipeline.write_text(first_only, encoding="utf-8")  # the broken file is the first step's
    assert cli("run", str(pipeline), "--quiet") == 2
    assert "more.csv" in capsys.readouterr().err
    summaries = [json.loads((p / "summary.json").read_text()) for p in report_dirs(project)]
    (real,) = [s for s in summaries if not s["dry_run"]]
    assert real["totals"]["rows_sent"] == 0 and real["accounting_ok"]


def test_a_report_that_does_not_add_up_exits_1_though_every_row_was_created(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug that writes one row's outcome twice (fake: the run itself cannot produce it)."""
    from recordsync.report.writer import ReportWriter

    pipeline = write_project(project, bad_byte=False)
    assert cli("run", str(pipeline), "--quiet", "--no-state") == 0
    record = ReportWriter.record

    def twice(self: ReportWriter, tally: Any, row: Any, *args: Any, **kw: Any) -> None:
        record(self, tally, row, *args, **kw)
        if row.source.source_row == 5:
            record(self, tally, row, *args, **kw)

    monkeypatch.setattr(ReportWriter, "record", twice)
    # rows written one by one (not as a chunk's block, report/answered.py) for the fake
    monkeypatch.setattr("recordsync.send.step.record_answered", lambda *a: False)
    capsys.readouterr()
    assert cli("run", str(pipeline), "--quiet", "--no-state") == 1
    assert "accounting mismatch" in capsys.readouterr().err


def test_an_unexpected_error_after_a_send_exits_3_not_1(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full disk as the report is finished (fake: the run cannot fill a disk): without
    the catch, Python's own exit code for a traceback is 1, "the run finished"."""
    import errno

    from recordsync.report.writer import ReportWriter

    def full(self: ReportWriter, *args: Any, **kw: Any) -> None:
        self.abandon()  # the row files closed, summary.json cannot be written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ReportWriter, "finish", full)
    pipeline = write_project(project, bad_byte=False)
    assert cli("run", str(pipeline), "--quiet", "--no-state") == 3
    err = capsys.readouterr().err
    assert "error: cannot write the report in reports/" in err
    assert "No space left on device (errno 28); the run stopped" in err
    assert "Traceback" not in err

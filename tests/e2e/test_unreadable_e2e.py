"""Unreadable is not absent: with mirror deletes on, a malformed line keeps its record (its
key counts as present when it can be read), and a line that may hide rows or a key (a quote
that swallowed lines, a missing delimiter) skips the step's mirror deletes, saying why in
summary.json and report.md. Over loopback against the sandbox."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy

from .support import all_records, served, target


def lines_of(rows: int) -> list[str]:
    return [f"P{i},p{i}@m.example" for i in range(rows)]


def setup(tmp: Path, rows: int, limits: str = "") -> Path:
    (tmp / "m.csv").write_text("Name,Email\n" + "\n".join(lines_of(rows)) + "\n")
    (tmp / "m.yaml").write_text(
        f"object_type: contacts\nsource: {{path: m.csv{limits}}}\nname: Name\n"
        "match_by: [email]\nfields: {email: Email}\n"
        "mirror_deletes: {enabled: true, max_share: 0.5}\n"
    )
    (tmp / "mirror.yaml").write_text("steps: [m.yaml]\n")
    return tmp / "mirror.yaml"


def request(tmp: Path, pipeline: Path) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        list_unchanged=True,  # every row's line, the unchanged ones too
    )


def results(result: Any) -> list[dict[str, str]]:
    with open(result.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def run_with(
    tmp: Path, rows: int, edit: dict[int, str], gone: int, eol: str = "\n", limits: str = ""
) -> Any:
    """First run of ``rows`` rows; then the export with ``edit`` (row → its line) and row
    ``gone`` removed; returns the second run's result and the live e-mails after it."""
    pipeline = setup(tmp, rows, limits)
    with served(tmp / "s.db") as url:
        first = run_pipeline(request(tmp, pipeline), target=target(url))
        assert first.exit_code == 0
        lines = [edit.get(i, line) for i, line in enumerate(lines_of(rows)) if i != gone]
        (tmp / "m.csv").write_bytes(("Name,Email" + eol + eol.join(lines) + eol).encode())
        second = run_pipeline(request(tmp, pipeline), target=target(url))
        live = {r["email"] for r in all_records(url, "contacts")}
    return second, live


def step(result: Any) -> dict[str, Any]:
    return dict(result.summary["steps"][0])


def test_an_extra_comma_keeps_the_record_and_other_deletes_still_run(tmp_path: Path) -> None:
    second, live = run_with(tmp_path, 10, {3: "P,3,p3@m.example"}, gone=7)
    s = step(second)
    assert (s["rows_invalid"], s["deleted"], s["mirror_deletes_skipped"]) == (1, 1, None)
    assert "p3@m.example" in live and "p7@m.example" not in live and len(live) == 9
    assert second.summary["accounting_ok"] and second.exit_code == 1


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_missing_comma_skips_the_steps_mirror_deletes_and_says_why(
    tmp_path: Path, eol: str
) -> None:
    second, live = run_with(tmp_path, 10, {3: "P3p3@m.example"}, gone=7, eol=eol)
    s = step(second)
    assert (s["rows_invalid"], s["deleted"]) == (1, 0)
    assert len(live) == 10
    why = s["mirror_deletes_skipped"]
    assert "line 5: it has 1 cells for 2 columns: a delimiter is missing" in why
    assert "no record was deleted" in why
    report = (second.report_dir / "report.md").read_text()
    assert "Mirror deletes of step m skipped: line 5:" in report
    assert second.summary["accounting_ok"] and second.exit_code == 1


@pytest.mark.parametrize(("at", "eol"), [(5, "\n"), (150, "\r\n"), (150, "\n")])
def test_a_stray_quote_is_reported_every_other_line_read_and_deletes_nothing(
    tmp_path: Path, at: int, eol: str
) -> None:
    """The line with the stray quote is invalid; every line after it is read as its own row.
    The quote merged that line's cells (its key may be among them): nothing is deleted."""
    rows = 300
    second, live = run_with(tmp_path, rows, {at: f'"P{at},p{at}@m.example'}, gone=rows - 50)
    s = step(second)
    out = results(second)
    assert len(out) == rows - 1  # a line for every physical data line
    assert s["rows_read"] == rows - 1 and second.summary["accounting_ok"]
    assert s["deleted"] == 0 and len(live) == rows
    start = at + 2  # the header is line 1
    assert f"line {start}: it has 1 cells for 2 columns" in s["mirror_deletes_skipped"]
    invalid = [r for r in out if r["status"] == "invalid"]
    assert [r["source_row"] for r in invalid] == [str(start)]
    assert "unbalanced quote: the quote at character 1 (cell 1)" in invalid[0]["error"]
    assert json.loads((second.report_dir / "summary.json").read_text())["steps"][0][
        "mirror_deletes_skipped"
    ]
    assert second.exit_code == 1


def test_an_invalid_key_cell_skips_the_steps_mirror_deletes(tmp_path: Path) -> None:
    second, live = run_with(tmp_path, 10, {3: "P3,p3 at m.example"}, gone=7)
    s = step(second)
    assert (s["rows_invalid"], s["deleted"], len(live)) == (1, 0, 10)
    assert "line 5: invalid, and its key cannot be read" in s["mirror_deletes_skipped"]


@pytest.mark.parametrize("raised", [False, True])
def test_a_swallowed_field_over_128_kib_is_reported_not_a_traceback(
    tmp_path: Path, raised: bool
) -> None:
    """Python's csv module refuses a cell over 128 KiB: a malformed line holding one was a
    raw _csv.Error on every run. Now the line with the stray quote is invalid and the rows
    after it are read, within raised limits too."""
    rows = 9000  # about 180 KiB after the stray quote
    limits = ", max_quoted_lines: 100000, max_quoted_bytes: 10000000" if raised else ""
    second, live = run_with(tmp_path, rows, {5: '"P5,p5@m.example'}, gone=3, limits=limits)
    s = step(second)
    assert second.error is None and second.exit_code == 1 and second.summary["accounting_ok"]
    assert s["deleted"] == 0 and len(live) == rows and s["mirror_deletes_skipped"]
    out = results(second)
    assert out[4]["source_row"] == "6" and out[4]["status"] == "invalid"
    assert len(out) == rows - 1 and s["rows_invalid"] == 1
    assert "line 6: unbalanced quote" in out[4]["error"]


def test_a_quote_closed_within_the_limits_that_holds_rows_stops_deletes_every_run(
    tmp_path: Path,
) -> None:
    """A stray quote closed three lines on: the rows between are read as rows of their own
    (they were folded into one cell); the line with the quote is invalid and its merged
    cells stop the deletes, also on the next run."""
    edit = {5: '"P5,p5@m.example', 8: 'P8",p8@m.example'}
    second, live = run_with(tmp_path, 10, edit, gone=2)
    s = step(second)
    assert (s["rows_read"], s["rows_invalid"], s["deleted"], len(live)) == (9, 1, 0, 10)
    assert second.exit_code == 1
    assert "line 6: it has 1 cells for 2 columns" in str(s["mirror_deletes_skipped"])
    with served(tmp_path / "s.db") as url:
        third = run_pipeline(request(tmp_path, tmp_path / "mirror.yaml"), target=target(url))
        assert len(all_records(url, "contacts")) == 10
    t = step(third)
    assert (t["rows_unchanged"], t["deleted"]) == (8, 0) and t["mirror_deletes_skipped"]

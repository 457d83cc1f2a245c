"""The report files: one results line per row, failures usable as a source, exact accounting."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.model import RESULTS_COLUMNS, PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.report.tally import StepTally, reason_group
from recordsync.report.writer import ReportWriter


def row(n: int, status: RowStatus, **values: str) -> PreparedRow:
    payload = {"name": f"R{n}"} if status is RowStatus.VALID else None
    return PreparedRow(
        SourceRow("in.csv", n, values or {"Name": f"R{n}"}),
        status,
        payload,
        match_by=None,
        match_value=None,
        error=None,
    )


def write_sample(tmp_path: Path) -> tuple[dict[str, object], Path]:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "configs/contacts.yaml", "contacts")
    writer.start_step(tally)
    tally.read, tally.sent = 6, 4
    writer.record(tally, row(2, RowStatus.VALID), RowStatus.CREATED, 10)
    writer.record(tally, row(3, RowStatus.VALID), RowStatus.UPDATED, 10)  # merged, same id
    writer.record(
        tally,
        row(4, RowStatus.VALID, Name="=HYPERLINK(x)"),
        RowStatus.FAILED,
        None,
        "Validation failed: email: invalid email format",
    )
    writer.record(tally, row(5, RowStatus.VALID), RowStatus.IN_DOUBT, None, "in doubt: lost")
    invalid = row(6, RowStatus.INVALID)
    invalid.error = "column 'Score' → field 'lead_score': '120' must be <= 100"
    writer.record(tally, invalid, RowStatus.INVALID, None, invalid.error)
    writer.record(tally, row(7, RowStatus.DUPLICATE), RowStatus.DUPLICATE, None, "dup")
    summary = writer.finish({"run_id": "r1", "pipeline": "p", "target": "http://x"})
    return summary, tmp_path / "run"


def test_results_csv_has_exactly_the_columns_and_one_line_per_row(tmp_path: Path) -> None:
    _, out = write_sample(tmp_path)
    with open(out / "results.csv", newline="") as f:
        lines = list(csv.reader(f))
    assert tuple(lines[0]) == RESULTS_COLUMNS
    assert [line[5] for line in lines[1:]] == [
        "created",
        "updated",
        "failed",
        "in_doubt",
        "invalid",
        "duplicate",
    ]
    assert lines[1][6] == "10"


def test_failures_csv_has_original_columns_plus_the_underscore_ones(tmp_path: Path) -> None:
    _, out = write_sample(tmp_path)
    with open(out / "failures.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["_status"] for r in rows] == ["failed", "in_doubt", "invalid", "duplicate"]
    assert rows[0]["Name"] == "'=HYPERLINK(x)"
    assert rows[0]["_source_row"] == "4" and rows[0]["_step"] == "contacts"
    assert rows[0]["_error"].startswith("Validation failed")
    assert not (out / ".failures.jsonl").exists()


def test_summary_counts_and_accounting(tmp_path: Path) -> None:
    summary, out = write_sample(tmp_path)
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == summary
    step = summary["steps"][0]  # type: ignore[index]
    assert (
        step["rows_read"],
        step["rows_invalid"],
        step["rows_duplicate"],
        step["rows_sent"],
        step["created"],
        step["updated"],
        step["failed"],
        step["in_doubt"],
    ) == (6, 1, 1, 4, 1, 1, 1, 1)
    assert summary["accounting_ok"] is True


def test_broken_counters_fail_the_accounting(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("s", "m", "deals")
    writer.start_step(tally)
    tally.read, tally.sent = 2, 2  # one row read was never reported
    writer.record(tally, row(2, RowStatus.VALID), RowStatus.CREATED, 1)
    summary = writer.finish({})
    assert summary["accounting_ok"] is False
    assert any("2 rows read but 1 outcomes" in e for e in summary["accounting_errors"])


def test_an_outcome_counted_without_its_results_line_fails_the_accounting(
    tmp_path: Path,
) -> None:
    """The step's own equations hold (2 read, 2 sent, 2 created); results.csv has one line."""
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("s", "m", "contacts")
    writer.start_step(tally)
    tally.read, tally.sent = 2, 2
    writer.record(tally, row(2, RowStatus.VALID), RowStatus.CREATED, 1)
    tally.outcomes[RowStatus.CREATED] += 1  # counted, but its line was never written
    summary = writer.finish({})
    assert summary["steps"][0]["accounting_ok"] is True  # type: ignore[index]
    assert summary["accounting_ok"] is False
    assert summary["accounting_errors"] == ["1 lines in results.csv for 2 outcomes"]
    assert len((tmp_path / "run" / "results.csv").read_text().splitlines()) == 2  # header + 1


def test_report_md_groups_reasons_and_lists_merges(tmp_path: Path) -> None:
    _, out = write_sample(tmp_path)
    md = (out / "report.md").read_text()
    assert "| contacts | contacts | 6 | 1 | 1 | 0 | 0 | 0 | 4 | 1 | 1 | 0 | 1 | 1 |" in md
    assert "column 'Score' → field 'lead_score': '…' must be <= 100" in md
    assert "1 row(s) sent to create came back `updated`" in md
    assert "landed on record 10" in md


def test_reason_groups_merge_messages_that_differ_only_in_values() -> None:
    a = reason_group("Validation failed: company_id: no companies record 42")
    b = reason_group("Validation failed: company_id: no companies record 7")
    assert a == b
    assert reason_group("x: 'Won' is not an option") == reason_group("x: 'Lost' is not an option")


_text = st.text(alphabet=st.sampled_from(list('ab ,"\r\né;x@.=\'+-\t')), max_size=6)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.sampled_from(["email", "name", "id"])),
            st.one_of(st.none(), _text),
            st.one_of(st.none(), st.integers(1, 10**12)),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["contacts", "deals, won"]),
    st.booleans(),
)
def test_unchanged_blocks_are_written_as_csv_writer_writes_rows(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str | None, str | None, int | None]],
    step: str,
    arrow: bool,
) -> None:
    """The quick path of ``record_block`` (no cell to quote) and the csv.writer path give the
    same lines as one ``record`` per row, with the block's columns as lists or as the Arrow
    arrays the fast path hands over."""
    root = tmp_path_factory.mktemp("blocks")
    lines = list(range(2, 2 + len(rows)))
    cols: list[object] = [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]
    if arrow:
        types = (pa.string(), pa.string(), pa.int64())
        cols = [pa.chunked_array([pa.array(c, t)]) for c, t in zip(cols, types, strict=True)]
    block = UnchangedBlock(
        "src/a.csv",
        np.array(lines, dtype=np.int64) if arrow else lines,
        None,
        [f"k{i}" for i in lines],
        *cols,
    )
    fast = ReportWriter(root / "fast", dry_run=False, list_unchanged=True)
    tally = StepTally(step, "m", "contacts")
    fast.start_step(tally)
    fast.record_block(tally, block)
    fast.finish({})
    slow = ReportWriter(root / "slow", dry_run=False, list_unchanged=True)
    tally2 = StepTally(step, "m", "contacts")
    slow.start_step(tally2)
    for line, (by, value, rid) in zip(lines, rows, strict=True):
        row = PreparedRow(SourceRow("src/a.csv", line, {}), RowStatus.UNCHANGED, None, by, value)
        slow.record(tally2, row, RowStatus.UNCHANGED, rid)
    slow.finish({})
    assert (root / "fast" / "results.csv").read_bytes() == (
        root / "slow" / "results.csv"
    ).read_bytes()
    assert tally.outcomes == tally2.outcomes


def test_results_csv_neutralises_formula_like_text_cells(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False, list_unchanged=True)
    tally = StepTally("=step", "m", "contacts")
    writer.start_step(tally)
    bad = PreparedRow(SourceRow("@in.csv", 2, {}), RowStatus.VALID, {}, "name", "=HYPERLINK(x)")
    writer.record(tally, bad, RowStatus.FAILED, None, "+ bad value")
    block = UnchangedBlock("@in.csv", [3], None, ["k"], ["name"], ["-1"], [7])
    writer.record_block(tally, block)
    writer.finish({})
    with open(tmp_path / "run" / "results.csv", newline="") as f:
        _, failed, unchanged = list(csv.reader(f))
    assert failed == [
        "'=step",
        "'@in.csv",
        "2",
        "name",
        "'=HYPERLINK(x)",
        "failed",
        "",
        "'+ bad value",
    ]
    assert unchanged == ["'=step", "'@in.csv", "3", "name", "'-1", "unchanged", "7", ""]

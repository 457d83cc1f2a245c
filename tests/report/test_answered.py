"""A chunk's answered rows written as one block: the same lines and counts as row by row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report.answered import record_answered
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter

match_values = st.one_of(
    st.text(max_size=6), st.integers(-5, 10**6), st.none(), st.sampled_from(["=1+1", "'@x", "a,b"])
)
answered_row = st.fixed_dictionaries(
    {
        "by": st.sampled_from(["email", "id", "name", None, ""]),
        "value": match_values,
        "status": st.sampled_from(
            [RowStatus.CREATED, RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED]
        ),
        "rid": st.one_of(st.integers(1, 40), st.none()),
        "error": st.sampled_from([None, None, None, "boom", "=cmd"]),
        "owner": st.sampled_from([None, "users:email", "default", "odd"]),
        "hint": st.booleans(),
        "file": st.sampled_from(["in.csv", "in.csv", "in.csv", "other.csv", "=f.csv"]),
        "payload": st.sampled_from(["match", "match", "match", "none", "no-match-key"]),
    }
)

plain_row = st.fixed_dictionaries(
    {
        "by": st.sampled_from(["email", "id", ""]),
        "value": st.one_of(st.text(max_size=4), st.integers(0, 99), st.just("=1+1")),
        "status": st.sampled_from([RowStatus.CREATED, RowStatus.UPDATED]),
        "rid": st.integers(1, 12),
        "error": st.none(),
        "owner": st.sampled_from([None, "users:email", "odd"]),
        "hint": st.just(False),
        "file": st.just("in.csv"),
        "payload": st.just("match"),
    }
)
"""Rows a block is written for (a chunk of only such rows)."""


def _rows(drawn: list[dict[str, Any]]) -> tuple[list[PreparedRow], list[EntryResult]]:
    rows, results = [], []
    for i, d in enumerate(drawn):
        payload: dict[str, Any] | None = {"name": f"R{i}", "fields": {}}
        if d["payload"] == "match":
            payload = {"match_by": d["by"], "match_value": d["value"], **(payload or {})}
        elif d["payload"] == "none":
            payload = None
        row = PreparedRow(
            SourceRow(d["file"], i + 2, {"Name": f"R{i}"}),
            RowStatus.VALID,
            payload,
            match_by="email",
            match_value=f"row{i}@x.example",
            owner_resolution=d["owner"],
            suggestions={"field": "stage", "value_map": {"a": "b"}} if d["hint"] else {},
        )
        rows.append(row)
        results.append(EntryResult(d["status"], d["rid"], d["error"]))
    return rows, results


def _write(directory: Path, chunks: list[list[dict[str, Any]]], block: bool) -> tuple[bytes, Any]:
    writer = ReportWriter(directory, dry_run=False)
    tally = StepTally("contacts", "contacts", "contacts")
    writer.start_step(tally)
    for drawn in chunks:
        rows, results = _rows(drawn)
        if not (block and record_answered(writer, tally, rows, results)):
            for row, r in zip(rows, results, strict=True):
                writer.record(tally, row, r.status, r.record_id, r.error)
    writer.abandon()
    counts = (
        list(tally.outcomes.items()),
        list(tally.owners.items()),
        tally.merged_creates,
        tally.shared_records,
        tally.merged_examples,
        tally.shared_examples,
        writer.lines_written,
    )
    return (directory / "results.csv").read_bytes(), counts  # bytes: line ends too


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=80)
@given(st.lists(st.one_of(st.lists(plain_row, max_size=8), st.lists(answered_row, max_size=8))))
def test_a_block_writes_what_row_by_row_writes(
    tmp_path: Path, chunks: list[list[dict[str, Any]]]
) -> None:
    n = len(list(tmp_path.iterdir()))
    assert _write(tmp_path / f"b{n}", chunks, True) == _write(tmp_path / f"r{n}", chunks, False)


def test_a_plain_chunk_is_written_as_a_block(tmp_path: Path) -> None:
    plain = {
        "by": "email", "value": "a@x.example", "status": RowStatus.CREATED, "rid": 7,
        "error": None, "owner": "default", "hint": False, "file": "in.csv", "payload": "match",
    }  # fmt: skip
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "contacts", "contacts")
    writer.start_step(tally)
    rows, results = _rows([plain, {**plain, "rid": 8, "status": RowStatus.UPDATED}])
    assert record_answered(writer, tally, rows, results)
    rows, results = _rows([plain, {**plain, "error": "boom", "status": RowStatus.FAILED}])
    assert not record_answered(writer, tally, rows, results)  # written row by row instead
    writer.abandon()
    lines = (tmp_path / "run" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert lines[1:] == [
        "contacts,in.csv,2,email,a@x.example,created,7,",
        "contacts,in.csv,3,email,a@x.example,updated,8,",
    ]


def test_results_lines_reach_the_disk_in_blocks_of_a_mebibyte(tmp_path: Path) -> None:
    """Each write to the disk hands the interpreter lock to the sending thread (with the 8 KiB
    default, once a chunk): lines are buffered up to 1 MiB, and all written at the end."""
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "contacts", "contacts")
    writer.start_step(tally)
    plain = {
        "by": "email", "value": "a@x.example", "status": RowStatus.CREATED, "rid": 7,
        "error": None, "owner": None, "hint": False, "file": "in.csv", "payload": "match",
    }  # fmt: skip
    for n in range(20):  # 2,000 lines, about 90 KB
        rows, results = _rows([{**plain, "rid": n * 100 + i} for i in range(100)])
        assert record_answered(writer, tally, rows, results)
    results_csv = tmp_path / "run" / "results.csv"
    assert results_csv.stat().st_size == 0
    writer.abandon()
    assert len(results_csv.read_text(encoding="utf-8").splitlines()) == 2001

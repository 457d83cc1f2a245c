"""Reports at scale: unchanged rows counted and listed only on request; results.csv and
failures.csv written gzip-compressed past a number of lines, and read back either way."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.model import RESULTS_COLUMNS, PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.report.reason import why_rows_not_ok
from recordsync.report.rows_file import find_rows_file, open_rows_file
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter
from recordsync.run.retry import _earlier_run

STATUSES = [RowStatus.CREATED, RowStatus.UPDATED, RowStatus.UNCHANGED, RowStatus.FAILED]


def sent(n: int) -> PreparedRow:
    return PreparedRow(
        SourceRow("in.csv", n, {"Name": f"R{n}", "Notes": "a,b\nc"}),
        RowStatus.VALID,
        {"name": f"R{n}", "match_by": "email", "match_value": f"r{n}@x.example"},
    )


def write(out: Path, statuses: list[RowStatus], block: int = 0, **kw: object) -> dict[str, object]:
    """One row per status (record id 100 + row), then ``block`` rows found unchanged from
    their digests."""
    writer = ReportWriter(out, dry_run=False, **kw)  # type: ignore[arg-type]
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    tally.read = len(statuses) + block
    tally.sent = sum(s is not RowStatus.UNCHANGED for s in statuses)
    for n, status in enumerate(statuses, start=2):
        error = "HTTP 502" if status is RowStatus.FAILED else None
        rid = None if status is RowStatus.FAILED else 100 + n
        writer.record(tally, sent(n), status, rid, error)
    if block:
        first = len(statuses) + 2
        lines = list(range(first, first + block))
        writer.record_block(
            tally,
            UnchangedBlock(
                "in.csv",
                lines,
                None,
                [f"k{i}" for i in lines],
                ["email"] * block,
                [f"r{i}@x.example" for i in lines],
                [100 + i for i in lines],
            ),
        )
    return writer.finish({"run_id": "r1"})


def rows_of(path: Path) -> list[list[str]]:
    with open_rows_file(path) as f:
        return list(csv.reader(f))


def test_unchanged_rows_are_counted_but_not_listed_by_default(tmp_path: Path) -> None:
    statuses = [RowStatus.UNCHANGED, RowStatus.CREATED, RowStatus.UNCHANGED, RowStatus.FAILED]
    summary = write(tmp_path / "run", statuses, block=5)
    lines = rows_of(tmp_path / "run" / "results.csv")
    assert tuple(lines[0]) == RESULTS_COLUMNS
    assert [(line[2], line[5]) for line in lines[1:]] == [("3", "created"), ("5", "failed")]
    assert summary["accounting_ok"], summary["accounting_errors"]
    totals = summary["totals"]
    assert isinstance(totals, dict)
    assert totals["rows_unchanged"] == 7 and totals["rows_read"] == 9
    assert summary["files"] == {
        "results": "results.csv",
        "results_lines": 2,
        "unchanged_listed": False,
        "failures": "failures.csv",
    }


def test_list_unchanged_lists_every_row(tmp_path: Path) -> None:
    statuses = [RowStatus.UNCHANGED, RowStatus.CREATED]
    summary = write(tmp_path / "run", statuses, block=3, list_unchanged=True)
    lines = rows_of(tmp_path / "run" / "results.csv")
    assert [line[5] for line in lines[1:]] == ["unchanged", "created"] + ["unchanged"] * 3
    assert lines[1][6] == "102" and lines[3] == [
        "contacts", "in.csv", "4", "email", "r4@x.example", "unchanged", "104", ""
    ]
    assert summary["accounting_ok"] and summary["files"]["unchanged_listed"] is True  # type: ignore[index]


def test_an_unlisted_outcome_still_counts_in_the_accounting(tmp_path: Path) -> None:
    """The check of lines against outcomes adds the unlisted rows: one row counted twice
    (an outcome without a results line and not unlisted either) is still caught."""
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    tally.read = 2
    writer.record(tally, sent(2), RowStatus.UNCHANGED, 1)
    tally.outcomes[RowStatus.UNCHANGED] += 1  # counted without a line or an unlisted row
    summary = writer.finish({})
    assert not summary["accounting_ok"]
    assert any(
        "0 lines in results.csv and 1 unchanged rows not listed for 2 outcomes" in e
        for e in summary["accounting_errors"]
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    statuses=st.lists(st.sampled_from(STATUSES), max_size=12),
    block=st.integers(0, 4),
    gzip_from=st.integers(0, 14),
    list_unchanged=st.booleans(),
)
def test_compressed_files_hold_the_bytes_of_the_plain_ones(
    tmp_path_factory: pytest.TempPathFactory,
    statuses: list[RowStatus],
    block: int,
    gzip_from: int,
    list_unchanged: bool,
) -> None:
    """Past ``gzip_from`` lines results.csv becomes results.csv.gz (and failures.csv
    failures.csv.gz), alone in the directory, holding exactly the plain file's bytes; the
    summary names the files it wrote."""
    root = tmp_path_factory.mktemp("gz")
    plain = write(root / "plain", statuses, block, list_unchanged=list_unchanged)
    packed = write(
        root / "packed", statuses, block, list_unchanged=list_unchanged, gzip_from=gzip_from
    )
    for kind in ("results", "failures"):
        plain_files: dict[str, object] = plain["files"]  # type: ignore[assignment]
        packed_files: dict[str, object] = packed["files"]  # type: ignore[assignment]
        lines = (
            plain_files["results_lines"]
            if kind == "results"
            else statuses.count(RowStatus.FAILED)
        )
        assert isinstance(lines, int)
        name = f"{kind}.csv" + (".gz" if lines > gzip_from else "")
        assert packed_files[kind] == name
        assert find_rows_file(root / "packed", f"{kind}.csv") == root / "packed" / name
        other = f"{kind}.csv" if name.endswith(".gz") else f"{kind}.csv.gz"
        assert not (root / "packed" / other).exists()
        data = (root / "packed" / name).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        assert data == (root / "plain" / f"{kind}.csv").read_bytes()
    assert packed["accounting_ok"] and packed["totals"] == plain["totals"]
    summary = json.loads((root / "packed" / "summary.json").read_text(encoding="utf-8"))
    assert summary["files"] == packed["files"]


def test_retry_reads_the_record_ids_of_a_compressed_results_file(tmp_path: Path) -> None:
    statuses = [RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED]
    write(tmp_path / "run", statuses, gzip_from=1)
    assert (tmp_path / "run" / "results.csv.gz").is_file()
    since, ids = _earlier_run(tmp_path / "run", {"started_at": "2026-11-29T01:00:00+00:00"})
    assert ids == {102, 103} and since is not None


def test_the_exit_1_line_names_the_compressed_failures_file(tmp_path: Path) -> None:
    summary = write(tmp_path / "run", [RowStatus.FAILED] * 3, gzip_from=2)
    why = why_rows_not_ok(summary, tmp_path / "run")
    assert why == f"3 failed rows: see {tmp_path / 'run' / 'failures.csv.gz'}"

"""``recordsync retry`` gets every cell of failures.csv back exactly: the report writer's
failures.csv → split_failures' temporary CSV → the CSV reader gives the original values and
the original source rows (bare CR, LF, CRLF, quotes, commas, formula-like cells, unicode)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recordsync.config.models import SourceConfig
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.read import iter_source
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter
from recordsync.run.retry import failures_source, nothing_to_retry, split_failures

TRICKY = [
    "a\rb",
    "a\nb",
    "a\r\nb",
    '"q", "',
    "x,y",
    "=1+1",
    "+49 30",
    "-5",
    "@me",
    "'=x",
    "\r",
    "\t=A1",
    "ünï\u2028cødé 🎉",
    " padded ",
    "",
]
CELL = st.one_of(
    st.sampled_from(TRICKY),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
)


def _write(
    out: Path,
    rows: list[dict[str, str]],
    status: RowStatus = RowStatus.FAILED,
    *,
    gzip_from: int = 100_000,
) -> Path:
    writer = ReportWriter(out, dry_run=False, gzip_from=gzip_from)
    tally = StepTally("deals", "configs/deals.yaml", "deals")
    writer.start_step(tally)
    for n, values in enumerate(rows, start=2):
        row = PreparedRow(SourceRow("src/deals.csv", n * 3, values), RowStatus.VALID, {})
        writer.record(tally, row, status, None, "HTTP 502: bad gateway")
    writer.finish({"run_id": "r1"})
    return out


def _read_back(report: Path, out: Path) -> list[tuple[int, str, dict[str, str]]]:
    out.mkdir()
    [(path, origins)] = split_failures(report, out).values()
    got = []
    for batch in iter_source(failures_source(SourceConfig(path="x.csv"), path), out):
        names = batch.batch.schema.names
        for i, line in enumerate(batch.rows):
            values = {n: batch.batch.column(n)[i].as_py() for n in names}
            origin = origins[int(line)]
            got.append((origin.source_row, origin.source_file, values))
        assert not batch.bad
    return got


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# a cell whose second line looks like a row, closed on it: read back as the cell it is
@example(cells=[("x", "\n,")], gzip_from=0)
@example(cells=[("a\rb", "\n,0")], gzip_from=100_000)
@given(
    cells=st.lists(st.tuples(CELL, CELL), min_size=1, max_size=6),
    gzip_from=st.sampled_from([0, 2, 100_000]),
)
def test_every_cell_comes_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, cells: list[tuple[str, str]], gzip_from: int
) -> None:
    """Whether failures.csv was written plain or compressed (failures.csv.gz)."""
    root = tmp_path_factory.mktemp("rt")
    # a row whose every cell is empty is a blank line to the reader, never a failure
    rows = [{"Name": a or "n", "Notes": b} for a, b in cells]
    report = _write(root / "run", rows, gzip_from=gzip_from)
    compressed = len(rows) > gzip_from
    assert (report / "failures.csv.gz").is_file() is compressed
    assert (report / "failures.csv").is_file() is not compressed
    got = _read_back(report, root / "tmp")
    want = [(n * 3, "src/deals.csv", values) for n, values in enumerate(rows, start=2)]
    assert got == want


def test_a_bare_carriage_return_keeps_later_rows_whole_and_numbered(tmp_path: Path) -> None:
    rows = [{"Name": "A", "Notes": "one\rtwo\rthree"}, {"Name": "B", "Notes": "=SUM(1)"}]
    report = _write(tmp_path / "run", rows)
    got = _read_back(report, tmp_path / "tmp")
    assert got == [(6, "src/deals.csv", rows[0]), (9, "src/deals.csv", rows[1])]


def test_source_columns_named_like_failures_own_columns_survive(tmp_path: Path) -> None:
    rows = [{"Name": "A", "_status": "won", "_error": "none", "__step": "s1"}]
    report = _write(tmp_path / "run", rows)
    with open(report / "failures.csv", newline="", encoding="utf-8") as f:
        header, line = list(csv.reader(f))
    assert header == [
        "Name",
        "_status",
        "_error",
        "__step",
        "___error",
        "___step",
        "___source_row",
        "___status",
        "___source_file",
    ]
    assert line[:4] == ["A", "won", "none", "s1"] and line[7] == "failed"
    assert _read_back(report, tmp_path / "tmp") == [(6, "src/deals.csv", rows[0])]
    assert nothing_to_retry(report) is None


@pytest.mark.parametrize("gzip_from", [0, 100_000])
def test_nothing_to_retry_names_the_status_column_it_found(tmp_path: Path, gzip_from: int) -> None:
    report = _write(
        tmp_path / "run", [{"Name": "A", "_status": "x"}], RowStatus.INVALID, gzip_from=gzip_from
    )
    why = nothing_to_retry(report)
    name = "failures.csv.gz" if gzip_from == 0 else "failures.csv"
    assert why is not None and "set `__status` to `failed`" in why and name in why


def test_formula_like_header_cells_are_neutralised_and_come_back(tmp_path: Path) -> None:
    rows = [{"=cmd|' /C calc'!A0": "v", "Name": "A"}]
    report = _write(tmp_path / "run", rows)
    with open(report / "failures.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[0] == "'=cmd|' /C calc'!A0"
    assert _read_back(report, tmp_path / "tmp") == [(6, "src/deals.csv", rows[0])]

"""A snapshot's rows added a chunk at a time (SnapshotWriter.add_many, column-wise) make the
same file as added a row at a time: the same rows in the same record batches; and an
acknowledged chunk keeps in it the rows keep_row keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.hook import _keep_rows, keep_row
from recordsync.state import StateStore
from recordsync.state.snapshot_codec import SNAPSHOT_FILE_SCHEMA
from recordsync.state.snapshots import SnapshotWriter, file_reader

Row = tuple[tuple[int, int], str, str | None, Any, int]
ROW = st.tuples(
    st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.text(max_size=3),
    st.sampled_from([None, "email", "id"]),
    st.one_of(st.none(), st.text(max_size=3), st.integers(-5, 99)),
    st.integers(1, 10**9),
)


def _batches(path: Path, chunks: list[list[Row]], column_wise: bool) -> list[pa.RecordBatch]:
    with StateStore(path / "state.db") as store:
        writer = SnapshotWriter(store, "p", "contacts", "r1")
        for chunk in chunks:
            if column_wise:
                columns = [list(c) for c in zip(*chunk, strict=True)] or [[]] * 5
                digests, keys, bys, values, rids = columns
                writer.add_many(digests, keys, bys, values, rids)
            else:
                for row in chunk:
                    writer.add(*row)
        writer.commit(b"fp")
        reader = file_reader(writer.path)
        return [reader.get_batch(i) for i in range(reader.num_record_batches)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(chunks=st.lists(st.lists(ROW, max_size=4), max_size=8))
def test_rows_added_column_wise_are_written_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[list[Row]]
) -> None:
    # batches end inside chunks
    monkeypatch.setattr("recordsync.tuning.sizes.SNAPSHOT_FLUSH_ROWS", 5)
    n = len(list(tmp_path.iterdir()))
    (tmp_path / f"a{n}").mkdir()
    (tmp_path / f"b{n}").mkdir()
    column_wise = _batches(tmp_path / f"a{n}", chunks, True)
    row_by_row = _batches(tmp_path / f"b{n}", chunks, False)
    assert [b.num_rows for b in column_wise] == [b.num_rows for b in row_by_row]
    assert all(a.equals(b) for a, b in zip(column_wise, row_by_row, strict=True))


ANSWERED = st.tuples(
    st.sampled_from([RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED, RowStatus.MERGED]),
    st.one_of(st.integers(1, 99), st.none()),  # record id
    st.booleans(),  # with a digest
    st.sampled_from(["a@x.example", None]),  # key
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(chunks=st.lists(st.lists(ANSWERED, max_size=4), max_size=6))
def test_an_acknowledged_chunk_keeps_the_rows_keep_row_keeps(
    tmp_path: Path, chunks: list[list[tuple[RowStatus, int | None, bool, str | None]]]
) -> None:
    """The hook's acknowledgement (column-wise when every row landed with its record id,
    digest and key) keeps in the next snapshot the rows that keep_row keeps, one by one."""
    n = len(list(tmp_path.iterdir()))
    written: list[list[pa.RecordBatch]] = []
    for side in ("chunk", "row"):
        with StateStore(tmp_path / f"{side}{n}" / "state.db") as store:
            writer = SnapshotWriter(store, "p", "contacts", "r1")
            for chunk in chunks:
                rows, results = [], []
                for i, (status, rid, digested, key) in enumerate(chunk):
                    row = PreparedRow(SourceRow("c.csv", i + 2, {}), RowStatus.VALID, {}, key=key)
                    row.match_by, row.match_value = "email", key
                    row.digest = (i, i + 1) if digested else None
                    rows.append(row)
                    results.append(EntryResult(status, rid))
                if side == "chunk":
                    _keep_rows(writer, rows, results)
                else:
                    for row, res in zip(rows, results, strict=True):
                        if res.status in (RowStatus.CREATED, RowStatus.UPDATED):
                            keep_row(writer, row, res.record_id)
            writer.commit(b"fp")
            reader = file_reader(writer.path)
            written.append([reader.get_batch(i) for i in range(reader.num_record_batches)])
    chunk_wise, row_wise = written
    assert pa.Table.from_batches(chunk_wise, SNAPSHOT_FILE_SCHEMA).equals(
        pa.Table.from_batches(row_wise, SNAPSHOT_FILE_SCHEMA)
    )


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(chunks=st.lists(st.lists(ROW, max_size=7), max_size=12), column_wise=st.booleans())
def test_the_writer_holds_few_rows_as_python_values_and_writes_whole_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[list[Row]], column_wise: bool
) -> None:
    """Rows added wait as Python values (about 300 bytes a row) for SNAPSHOT_PENDING_ROWS
    rows at most, then as Arrow pieces: a nightly run's changed rows no longer held a whole
    batch of the file (65,536 rows) as Python objects. The file's batches stay as they were:
    SNAPSHOT_FLUSH_ROWS rows each (the last fewer), the rows in the order they came."""
    monkeypatch.setattr("recordsync.tuning.sizes.SNAPSHOT_FLUSH_ROWS", 12)
    monkeypatch.setattr("recordsync.tuning.sizes.SNAPSHOT_PENDING_ROWS", 5)
    n = len(list(tmp_path.iterdir()))
    (tmp_path / f"w{n}").mkdir()
    with StateStore(tmp_path / f"w{n}" / "state.db") as store:
        writer = SnapshotWriter(store, "p", "contacts", "r1")
        for chunk in chunks:
            if column_wise:
                columns = [list(c) for c in zip(*chunk, strict=True)] or [[]] * 5
                writer.add_many(*columns)
            else:
                for row in chunk:
                    writer.add(*row)
                    assert len(writer._p.d0) < 5
            assert len(writer._p.d0) < 5  # never a batch's worth of Python rows
        writer.commit(b"fp")
        reader = file_reader(writer.path)
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    rows = [r for chunk in chunks for r in chunk]
    sizes_ = [b.num_rows for b in batches]
    assert sum(sizes_) == len(rows)
    assert all(s == 12 for s in sizes_[:-1]) and (not sizes_ or 0 < sizes_[-1] <= 12)
    table = pa.Table.from_batches(batches, SNAPSHOT_FILE_SCHEMA)
    assert table.column("d0").to_pylist() == [r[0][0] for r in rows]
    assert table.column("record_id").to_pylist() == [r[4] for r in rows]
    assert table.column("key").to_pylist() == [r[1] for r in rows]

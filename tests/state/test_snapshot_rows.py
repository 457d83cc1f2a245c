"""A snapshot's rows added a chunk at a time (SnapshotWriter.add_many, column-wise) make the
same file as added a row at a time: the same rows in the same record batches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.state import StateStore
from recordsync.state.snapshots import SnapshotWriter

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
        reader = pa.ipc.open_file(str(writer.path))
        return [reader.get_batch(i) for i in range(reader.num_record_batches)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(chunks=st.lists(st.lists(ROW, max_size=4), max_size=8))
def test_rows_added_column_wise_are_written_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[list[Row]]
) -> None:
    monkeypatch.setattr("recordsync.state.snapshots.FLUSH_ROWS", 5)  # batches end inside chunks
    n = len(list(tmp_path.iterdir()))
    (tmp_path / f"a{n}").mkdir()
    (tmp_path / f"b{n}").mkdir()
    column_wise = _batches(tmp_path / f"a{n}", chunks, True)
    row_by_row = _batches(tmp_path / f"b{n}", chunks, False)
    assert [b.num_rows for b in column_wise] == [b.num_rows for b in row_by_row]
    assert all(a.equals(b) for a, b in zip(column_wise, row_by_row, strict=True))

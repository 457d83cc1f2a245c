"""BatchValues: a batch's original values per row, made on demand, equal to the eager dicts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import SourceRow
from recordsync.read import batch as batch_module
from recordsync.read.batch import BatchValues, may_contain

CELL = st.one_of(st.none(), st.text(max_size=5))


def eager(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """What prepare built for every row before values became lazy."""
    names = batch.schema.names
    cols = [c.to_pylist() for c in batch.columns]
    return [dict(zip(names, cells, strict=True)) for cells in zip(*cols, strict=True)]


@settings(max_examples=40, deadline=None)
@given(
    cells=st.lists(
        st.tuples(CELL, CELL, st.integers(-5, 5) | st.none()), min_size=20, max_size=120
    ),
    gaps=st.lists(st.integers(1, 3), min_size=120, max_size=120),
    order=st.randoms(use_true_random=False),
)
def test_every_row_asked_in_any_order_equals_the_eager_dict(
    cells: list[tuple[str | None, str | None, int | None]], gaps: list[int], order: Any
) -> None:
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([c[0] for c in cells], pa.string()),
            pa.array([c[1] for c in cells], pa.string()),
            pa.array([c[2] for c in cells], pa.int64()),
        ],
        names=["a", "b", "n"],
    )
    rows = np.cumsum(np.array(gaps[: len(cells)], dtype=np.int64)) + 1  # ascending, gapped
    bv = BatchValues(batch, rows)
    want = dict(zip(rows.tolist(), eager(batch), strict=True))
    asked = list(want)
    order.shuffle(asked)
    # past num_rows // 16 + 16 rows the batch is converted at once: both ways are covered
    for r in asked:
        assert bv.values_of(r) == want[r]
    for r in asked[:3]:
        got = bv.values_of(r)
        assert got == want[r]
        got["a"] = "changed"  # every call makes a new dict
        assert bv.values_of(r) == want[r]


def test_one_at_a_time_then_the_whole_batch_at_once() -> None:
    n = 400  # 400 // 16 + 16 = 41 rows are read one at a time, the rest from lists
    batch = pa.RecordBatch.from_pydict({"a": [f"a{i}" for i in range(n)], "i": list(range(n))})
    rows = np.arange(2, n + 2, dtype=np.int64) * 2
    bv = BatchValues(batch, rows)
    for r in reversed(rows.tolist()):
        assert bv.values_of(r) == {"a": f"a{r // 2 - 2}", "i": r // 2 - 2}


def test_typed_and_duplicated_columns_are_read_like_the_eager_dicts() -> None:
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([dt.date(2025, 1, 2), None, dt.date(2024, 2, 29)]),
            pa.array([1.5, None, 3.0]),
            pa.array(["x", "y", "x"]).dictionary_encode(),
            pa.array([True, False, None]),
            pa.array(["first", "second", "third"]),
        ],
        names=["d", "f", "cat", "b", "d"],  # a duplicated name: the last column wins
    )
    rows = np.array([2, 3, 7], dtype=np.int64)
    bv = BatchValues(batch, rows)
    for r, want in zip(rows.tolist(), eager(batch), strict=True):
        assert bv.values_of(r) == want
    assert bv.values_of(2)["d"] == "first"


def test_a_row_not_in_the_batch_is_a_key_error() -> None:
    bv = BatchValues(pa.RecordBatch.from_pylist([{"a": "1"}]), np.array([5], dtype=np.int64))
    for missing in (4, 6, 0):
        with pytest.raises(KeyError, match=f"row {missing} is not in this batch"):
            bv.values_of(missing)


@given(
    st.lists(st.one_of(st.none(), st.text(alphabet="ab\x00", max_size=4)), max_size=20),
    st.integers(0, 20),
    st.integers(0, 20),
    st.booleans(),
)
def test_may_contain_looks_at_the_values_of_a_slice_only(
    cells: list[str | None], start: int, size: int, large: bool
) -> None:
    """Never False where a value holds the character; and a slice whose values do not hold
    it says so, whatever the rest of its batch holds (a slice shares the batch's buffers)."""
    arr = pa.array(cells, pa.large_string() if large else pa.string()).slice(start, size)
    holds = any("\x00" in v for v in arr.to_pylist() if v is not None)
    assert may_contain(arr, "\x00") is holds
    with pytest.MonkeyPatch.context() as mp:  # without the C library's memchr: a copy
        mp.setattr(batch_module, "_memchr", None)
        assert may_contain(arr, "\x00") is holds


@settings(max_examples=40, deadline=None)
@given(
    cells=st.lists(st.tuples(CELL, st.integers(-5, 5) | st.none()), min_size=1, max_size=60),
    picks=st.lists(st.integers(0, 59), max_size=40),
    eager_first=st.booleans(),
)
def test_cells_of_a_column_equal_the_row_dicts(
    cells: list[tuple[str | None, int | None]], picks: list[int], eager_first: bool
) -> None:
    """cells_of(column, rows) is values_of(row).get(column) of each row, before and after the
    batch was made into lists, and None for a column the batch does not have."""
    batch = pa.RecordBatch.from_arrays(
        [pa.array([c[0] for c in cells], pa.string()), pa.array([c[1] for c in cells])],
        names=["a", "n"],
    )
    rows = np.arange(2, 2 + len(cells), dtype=np.int64) * 2  # gapped, ascending
    bv = BatchValues(batch, rows)
    asked = sorted({int(rows[p % len(rows)]) for p in picks}) or [int(rows[0])]
    want = dict(zip(rows.tolist(), eager(batch), strict=True))
    if eager_first:  # past the rows read one at a time: the batch as lists
        for r in rows.tolist() * 2:
            bv.values_of(r)
    for column in ("a", "n", "missing"):
        assert bv.cells_of(column, asked) == [want[r].get(column) for r in asked]
    with pytest.raises(KeyError):
        bv.cells_of("a", [int(rows[0]) + 1])


@settings(max_examples=40, deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9), st.booleans()), max_size=25)
)
def test_source_row_cells_equal_each_rows_values(picks: list[tuple[int, int, bool]]) -> None:
    """SourceRow.cells of rows of two batches, rows made with a dict, rows whose dict was
    made already: each row's ``values.get(column)``."""
    batches = []
    for b in range(2):
        batch = pa.RecordBatch.from_arrays(
            [pa.array([f"{b}-{i}" if i % 3 else None for i in range(10)]), pa.array(range(10))],
            names=["k", "n"],
        )
        batches.append(BatchValues(batch, np.arange(2, 12, dtype=np.int64)))
    sources = []
    for which, i, touched in picks:
        if which == 2:
            source = SourceRow("f.csv", i + 2, {"k": f"d{i}"} if i % 2 else {})
        else:
            source = SourceRow("f.csv", i + 2, None, batches[which])
            if touched:
                _ = source.values  # its dict made: read from it
        sources.append(source)
    want = {c: [s.values.get(c) for s in sources] for c in ("k", "n", "missing")}
    fresh = [
        SourceRow("f.csv", s.source_row, None, batches[w]) if w < 2 and not t else s
        for s, (w, _, t) in zip(sources, picks, strict=True)
    ]
    for column, cells in want.items():
        assert SourceRow.cells(fresh, column) == cells

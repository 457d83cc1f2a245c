"""The snapshot rows a database-mode step did not read, as a bitmap
(recordsync.nightly.unchanged_rows): the same rows, in the same order, as the row numbers it
replaces, whatever the spans and blocks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.nightly import unchanged_rows
from recordsync.nightly.unchanged_rows import UnchangedRows


@settings(max_examples=80)
@given(
    found=st.lists(st.one_of(st.none(), st.booleans()), max_size=90),
    chunk=st.integers(1, 9),
    span=st.sampled_from([8, 16, 24, 1 << 20]),
    block=st.integers(1, 12),
    drop=st.integers(0, 4),
)
def test_the_bitmap_holds_the_rows_not_found_in_order(
    found: list[bool | None], chunk: int, span: int, block: int, drop: int
) -> None:
    arr = pa.chunked_array(
        [found[i : i + chunk] for i in range(0, len(found), chunk)] or [[]], pa.bool_()
    )
    want = [i for i, f in enumerate(found) if f is not True]
    old = unchanged_rows.SPAN
    unchanged_rows.SPAN = span
    try:
        rows = UnchangedRows.where_not(arr)
        assert len(rows) == len(want)
        assert [int(v) for s in rows.spans() for v in s] == want
        blocks = list(rows.blocks(block))
        assert [int(v) for b in blocks for v in b] == want
        assert all(len(b) == block for b in blocks[:-1]) and all(len(b) for b in blocks)
        assert all(b.dtype == np.int64 for b in blocks)
        same = UnchangedRows.of(len(found), np.array(want, np.int64))
        assert bytes(same.bits) == bytes(rows.bits)
        if drop:  # every drop-th row left out
            rows.keep(lambda at: at % drop != 0)
            kept = [i for i in want if i % drop != 0]
            assert len(rows) == len(kept)
            assert [int(v) for b in rows.blocks(block) for v in b] == kept
    finally:
        unchanged_rows.SPAN = old


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 23])
def test_every_row(size: int) -> None:
    rows = UnchangedRows.every(size)
    assert len(rows) == size
    assert [int(v) for b in rows.blocks(5) for v in b] == list(range(size))


def test_one_bit_a_row() -> None:
    rows = UnchangedRows.every(10_000_000)
    assert rows.bits.nbytes == 1_250_000

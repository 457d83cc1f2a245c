"""A read batch split in two (read/batch.py, ``SourceBatch.split``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.read import BadLine, SourceBatch


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.integers(2, 400), min_size=2, max_size=60, unique=True),
    bad_share=st.integers(0, 3),
    data=st.data(),
)
def test_a_split_batch_keeps_every_row_and_malformed_line_where_it_falls(
    lines: list[int], bad_share: int, data: st.DataObject
) -> None:
    """The two parts hold the batch's rows in order, the first ``n`` in the first; each
    malformed line goes with the part whose rows it falls among (the first when it comes
    before the second part's first row): prepared part after part, lines come out as from
    the one batch."""
    lines.sort()
    bad_lines = [n for i, n in enumerate(lines) if bad_share and i % 4 < bad_share]
    good = [n for n in lines if n not in bad_lines]
    if len(good) < 2:
        good = [1, 401]
    sb = SourceBatch(
        "f.csv",
        pa.RecordBatch.from_pydict({"line": good}),
        np.array(good, dtype=np.int64),
        [BadLine(n, "x", "bad") for n in bad_lines],
    )
    n = data.draw(st.integers(1, len(good) - 1))
    head, rest = sb.split(n)
    assert head.rows.tolist() == good[:n] and rest.rows.tolist() == good[n:]
    for part in (head, rest):
        assert part.file == "f.csv"
        assert part.batch.column(0).to_pylist() == part.rows.tolist()
    assert all(b.line < good[n] for b in head.bad)
    assert all(b.line > good[n] for b in rest.bad)
    assert [b.line for b in head.bad + rest.bad] == bad_lines


@pytest.mark.parametrize("n", [0, 3, -1])
def test_a_batch_is_split_between_two_of_its_rows_only(n: int) -> None:
    sb = SourceBatch("f.csv", pa.RecordBatch.from_pydict({"line": [1, 2, 3]}), np.arange(1, 4))
    with pytest.raises(ValueError, match="cannot split a batch of 3 rows"):
        sb.split(n)

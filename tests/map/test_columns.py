"""match_keys: the first rule with a value gives the row's key, match_by and match_value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from recordsync.map.columns import Column, match_keys

VALUE = st.one_of(st.none(), st.just(""), st.text(max_size=3), st.integers(0, 3))


def plain(
    n: int, rules: list[tuple[str, list[Any]]]
) -> tuple[list[str | None], list[str | None], list[Any]]:
    keys: list[str | None] = [None] * n
    bys: list[str | None] = [None] * n
    vals: list[Any] = [None] * n
    for i in range(n):
        for by, values in rules:
            if values[i]:  # None, "" and 0 are no value
                keys[i], bys[i], vals[i] = f"{by}:{values[i]}", by, values[i]
                break
    return keys, bys, vals


@given(data=st.data(), n=st.integers(0, 8), bys=st.lists(st.sampled_from(["email", "id", "name"])))
def test_match_keys_equal_the_row_by_row_rule(data: st.DataObject, n: int, bys: list[str]) -> None:
    dense = st.lists(st.text(min_size=1, max_size=3) | st.integers(1, 3), min_size=n, max_size=n)
    rules = [
        (
            by,
            data.draw(
                dense if data.draw(st.booleans()) else st.lists(VALUE, min_size=n, max_size=n)
            ),
        )
        for by in bys
    ]
    assert match_keys(n, rules) == plain(n, rules)


CELLS = st.lists(st.one_of(st.none(), st.text()), min_size=1, max_size=8)


@given(cells=CELLS, data=st.data())
def test_errors_quote_the_same_cell_from_an_arrow_array_as_from_a_list(
    cells: list[str | None], data: st.DataObject
) -> None:
    """A column's errors quote the cell of their row whether the cells are kept as the
    Arrow array (converted only at failing rows) or as a list; ``put_first`` too."""
    n = len(cells)
    reasons = data.draw(st.lists(st.one_of(st.none(), st.just("is bad")), min_size=n, max_size=n))
    first = data.draw(st.lists(st.one_of(st.none(), st.just("no match")), min_size=n, max_size=n))
    arr = pa.array(cells, pa.string())
    present = np.ones(n, dtype=bool)
    lazy = Column("k", "col", [None] * n, present, list(reasons), None, arr)
    eager = Column("k", "col", [None] * n, present, list(reasons), None, cells)
    assert [lazy.error(i) for i in range(n)] == [eager.error(i) for i in range(n)]
    cells_read = pa.array([f"<{c}>" for c in cells], pa.string())
    lazy.put_first(list(first), cells_read)
    eager.put_first(list(first), cells_read)
    assert [lazy.error(i) for i in range(n)] == [eager.error(i) for i in range(n)]

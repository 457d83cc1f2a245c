"""Compiled per-row batch inputs: the same dicts as the plain construction, one per row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.map.columns import Column
from recordsync.map.rows import MappedColumns, payload_dicts

KEYS = st.lists(st.text(max_size=6), max_size=8)
CELL = st.one_of(st.none(), st.text(max_size=4), st.integers(), st.lists(st.text(max_size=2)))


@given(keys=KEYS, data=st.data())
def test_fields_equal_dict_zip(keys: list[str], data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 5))
    cols = [data.draw(st.lists(CELL, min_size=n, max_size=n)) for _ in keys]
    names = [f"r{i}" for i in range(n)]
    got = [p["fields"] for p in payload_dicts(names, ["name"] * n, names, keys, cols)]
    want = (
        [dict(zip(keys, cells, strict=True)) for cells in zip(*cols, strict=True)]
        if keys
        else [{} for _ in range(n)]
    )
    assert got == want
    assert [list(d) for d in got] == [list(d) for d in want]  # same key order
    assert len({id(d) for d in got}) == n  # every row its own dict


def test_keys_are_data_not_code() -> None:
    keys = ["a}; import os #", "{x}", "lambda: 1", ""]
    rows = payload_dicts(["n"], [None], [None], keys, [[1], [2], [3], [4]])
    assert rows == [
        {"name": "n", "fields": {"a}; import os #": 1, "{x}": 2, "lambda: 1": 3, "": 4}}
    ]


def test_payload_dicts_rejects_ragged_columns() -> None:
    with pytest.raises(ValueError, match="expected 2"):
        payload_dicts(["a", "b"], [None, None], [None, None], ["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="2 keys but 1 columns"):
        payload_dicts(["a", "b"], [None, None], [None, None], ["a", "b"], [[1, 2]])


def test_payload_dicts_with_and_without_match_rule() -> None:
    out = payload_dicts(
        ["Ann", "Bob"],
        ["email", None],
        ["ann@x.io", None],
        ["email", "tags"],
        [["ann@x.io", None], [["vip"], []]],
    )
    assert out == [
        {
            "name": "Ann",
            "match_by": "email",
            "match_value": "ann@x.io",
            "fields": {"email": "ann@x.io", "tags": ["vip"]},
        },
        {"name": "Bob", "fields": {"email": None, "tags": []}},
    ]
    assert list(out[0]) == ["name", "match_by", "match_value", "fields"]
    assert out[0]["fields"] is not out[1]["fields"]


@given(
    st.lists(
        st.tuples(st.text(max_size=3), st.one_of(st.none(), st.sampled_from(["email", "name"]))),
        max_size=6,
    )
)
def test_payload_dicts_match_the_plain_construction(rows: list[tuple[str, Any]]) -> None:
    names = [r[0] for r in rows]
    bys = [r[1] for r in rows]
    vals = [f"v{i}" if b else None for i, b in enumerate(bys)]
    f1 = [str(i) for i in range(len(rows))]
    got = payload_dicts(names, bys, vals, ["k"], [f1])
    want = [
        {"name": nm, "match_by": by, "match_value": mv, "fields": {"k": f}}
        if by is not None
        else {"name": nm, "fields": {"k": f}}
        for nm, by, mv, f in zip(names, bys, vals, f1, strict=True)
    ]
    assert got == want


@given(data=st.data())
def test_mapped_columns_rows_leave_out_absent_fields_as_plain_dicts(data: st.DataObject) -> None:
    """``MappedColumns.rows`` of any range: each row's fields are the present ones, in the
    mapping's order, as a per-row construction gives them (absent ones removed in one C
    loop per column)."""
    keys = data.draw(st.lists(st.text(max_size=4), unique=True, max_size=5))
    n = data.draw(st.integers(0, 8))
    cols = [data.draw(st.lists(CELL, min_size=n, max_size=n)) for _ in keys]
    present = [data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) for _ in keys]
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    names = [f"r{i}" for i in range(n)]
    fields = [
        Column(k, k, c, np.array(p, dtype=bool), None, None)
        for k, c, p in zip(keys, cols, present, strict=True)
    ]
    mc = MappedColumns(
        names, fields, None, [None] * n, {}, names, ["name"] * n, names, [None] * n
    )
    got = [p["fields"] for p in mc.rows(start, stop).payloads]
    want = [
        {k: c[i] for k, c, p in zip(keys, cols, present, strict=True) if p[i]}
        for i in range(start, stop)
    ]
    assert got == want
    assert [list(d) for d in got] == [list(d) for d in want]  # same key order

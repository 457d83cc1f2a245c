"""match_keys: the first rule with a value gives the row's key, match_by and match_value."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from recordsync.map.columns import match_keys

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

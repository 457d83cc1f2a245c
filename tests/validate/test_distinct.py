"""Per-distinct-value helpers: same results as the plain per-row forms."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from recordsync.tuning.sizes import VALUE_MEMO_MAX
from recordsync.validate.distinct import map_distinct, pylist

VALUES = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "", "ü"]), st.text(max_size=3)))


@given(values=VALUES, repeat=st.integers(1, 300))
def test_pylist_equals_to_pylist(values: list[str | None], repeat: int) -> None:
    arr = pa.array(values * repeat, pa.string())
    got = pylist(arr)
    assert got == arr.to_pylist()
    assert pylist(pa.chunked_array([arr, arr], pa.string())) == arr.to_pylist() * 2


def test_pylist_shares_strings_of_repeated_values() -> None:
    got = pylist(pa.array(["lead", "customer"] * 500 + [None]))
    assert got[0] is got[2] and got[-1] is None
    assert pylist(pa.array([1, 2, None])) == [1, 2, None]  # other types: as to_pylist


def test_memo_is_used_and_bounded() -> None:
    calls: list[Any] = []

    def fn(v: Any) -> tuple[Any, str | None, None]:
        calls.append(v)
        return v.upper(), ("short" if len(v) < 2 else None), None

    memo: dict[Any, Any] = {}
    a = map_distinct(pa.array(["x", "yy", None, "x"]), fn, memo)
    b = map_distinct(pa.array(["yy", "x"]), fn, memo)
    assert a == (["X", "YY", None, "X"], ["short", None, None, "short"], None)
    assert b == (["YY", "X"], [None, "short"], None)
    assert sorted(calls) == ["x", "yy"]  # once per distinct value across both batches
    assert VALUE_MEMO_MAX >= 1000

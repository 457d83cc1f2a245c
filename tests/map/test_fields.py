"""Extraction and transforms, column-wise over a record batch."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import FieldSpec
from recordsync.map.fields import _blank_to_null, extract, split_list

BATCH = pa.RecordBatch.from_pydict(
    {
        "first": ["Ann", "  Bob ", "", "   "],
        "last": ["Lee", "", "Cruz", ""],
        "stage": ["Won!", "lost", " closed WON ", ""],
    }
)


def run(**spec: Any) -> tuple[list[Any], list[bool]]:
    ex = extract(FieldSpec(**spec), BATCH)
    return ex.values.to_pylist(), ex.explicit_null.tolist()


def test_column_trim_and_blank_is_no_value() -> None:
    assert run(column="first") == (["Ann", "Bob", None, None], [False] * 4)
    assert run(column="first", trim=False)[0] == ["Ann", "  Bob ", None, "   "]


def test_template_joins_present_columns_and_blank_when_all_blank() -> None:
    assert run(template="{first} {last}")[0] == ["Ann Lee", "Bob", "Cruz", None]
    assert run(template="{last}, {first}!")[0] == ["Lee, Ann!", ", Bob!", "Cruz, !", None]


def test_value_map_exact_then_case_insensitive_then_passthrough() -> None:
    values, _ = run(column="stage", value_map={"Won!": "won", "closed won": "won"})
    assert values == ["won", "lost", "won", None]


def test_value_map_to_null_is_an_explicit_null() -> None:
    values, explicit = run(column="stage", value_map={"lost": None})
    assert values[1] is None and explicit[1] is True
    assert explicit[3] is False


def test_case_transforms_and_constants() -> None:
    assert run(column="first", case="upper")[0] == ["ANN", "BOB", None, None]
    assert run(column="stage", case="title")[0][2] == "Closed Won"
    assert run(value="import")[0] == ["import"] * 4
    assert run(value=None) == ([None] * 4, [True] * 4)


def test_default_fills_blanks_and_empty_null_sends_null() -> None:
    assert run(column="last", default="Unknown")[0] == ["Lee", "Unknown", "Cruz", "Unknown"]
    assert run(column="last", empty="null")[1] == [False, True, False, True]


def test_split_list_trims_and_drops_empty_elements() -> None:
    arr = pa.array(["VIP; Partner", "vip;;", None, " "], pa.string())
    assert split_list(arr, ";").to_pylist() == [["VIP", "Partner"], ["vip"], None, []]


_cells = st.lists(st.one_of(st.none(), st.just(""), st.text(max_size=6)), max_size=40)


@given(_cells, st.integers(0, 40), st.integers(0, 40))
def test_blank_to_null_is_the_if_else_it_replaces(cells: list[str | None], a: int, b: int) -> None:
    """The bitmap fast path gives what ``if_else(length == 0, null, arr)`` gives, on whole
    arrays and on slices (offsets not at 0), with and without nulls."""
    arr = pa.array(cells, pa.string()).slice(min(a, len(cells)), b)
    want = pc.if_else(pc.equal(pc.utf8_length(arr), 0), pa.scalar(None, pa.string()), arr)
    got = _blank_to_null(arr)
    got.validate(full=True)
    assert got.to_pylist() == want.to_pylist()
    assert got.null_count == want.null_count

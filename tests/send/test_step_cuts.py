"""The step runner's buffer taken a list of rows at a time (send/step.py ``cut`` and
``valid_counts``): the same cuts and the same checks as adding one row at a time."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from recordsync.core.model import Item, PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.send.step import checked, cut, valid_counts


def _one_at_a_time(flags: list[bool], at: int, room_valid: int, room_rows: int) -> int:
    """The end a loop adding one row at a time reaches: after the row that makes
    ``room_valid`` VALID rows or ``room_rows`` rows, else the end of the list."""
    valid = 0
    for rows, k in enumerate(range(at, len(flags)), start=1):
        valid += flags[k]
        if valid >= room_valid or rows >= room_rows:
            return k + 1
    return len(flags)


@given(st.lists(st.booleans(), min_size=1, max_size=60), st.data())
def test_cut_is_where_a_row_by_row_loop_flushes(flags: list[bool], data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(flags) - 1))
    room_valid = data.draw(st.integers(1, 70))
    room_rows = data.draw(st.integers(1, 70))
    counts = [0]
    for f in flags:
        counts.append(counts[-1] + f)
    assert cut(counts, at, room_valid, room_rows) == _one_at_a_time(
        flags, at, room_valid, room_rows
    )


_status = st.sampled_from(
    [RowStatus.VALID, RowStatus.VALID, RowStatus.INVALID, RowStatus.DUPLICATE]
)
_payload = st.sampled_from([None, {}, {"name": "x"}, {"name": "y", "fields": {"a": 1}}])


def _row(n: int, status: RowStatus, payload: dict[str, Any] | None) -> PreparedRow:
    return PreparedRow(SourceRow("c.csv", n + 2, {}), status, payload)


@given(st.lists(st.tuples(_status, _payload), max_size=40))
def test_valid_counts_are_those_of_rows_checked_one_at_a_time(
    rows: list[tuple[RowStatus, dict[str, Any] | None]],
) -> None:
    """Valid rows without a batch input made INVALID (as ``checked`` makes them), and the
    running count of VALID rows: as a loop over the rows, one ``checked`` each, finds."""
    items: list[Item] = [_row(i, s, p) for i, (s, p) in enumerate(rows)]
    one_by_one = [checked(r) for r in copy.deepcopy(items) if isinstance(r, PreparedRow)]
    counts = valid_counts(items)
    assert counts is not None
    expected = [0]
    for r in one_by_one:
        expected.append(expected[-1] + (r.status is RowStatus.VALID))
    assert counts == expected
    assert [(r.status, r.error) for r in items if isinstance(r, PreparedRow)] == [
        (r.status, r.error) for r in one_by_one
    ]


def test_a_list_with_a_block_is_taken_one_item_at_a_time() -> None:
    block = UnchangedBlock.__new__(UnchangedBlock)
    assert valid_counts([_row(0, RowStatus.VALID, {"name": "x"}), block]) is None

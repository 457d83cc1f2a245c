"""Source-row digests copied onto prepared rows a list at a time (prepare/digests.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.prepare.digests import _with_digests
from recordsync.prepare.seen_log import Seen

_U64 = st.integers(0, 2**64 - 1)


def _one_by_one(
    rows: list[PreparedRow], seen: Seen, positions: list[int]
) -> list[tuple[int, int] | None]:
    """The digests the rows got when they were set row by row (before lists)."""
    assert seen.digests is not None and seen.ok is not None
    line_of, pairs, has = seen.rows.tolist(), seen.digests.tolist(), seen.ok.tolist()
    out: list[tuple[int, int] | None] = []
    j = 0
    for r in rows:
        got = None
        if j < len(positions) and r.source.source_row == line_of[positions[j]]:
            i = positions[j]
            j += 1
            if has[i]:
                got = (pairs[i][0], pairs[i][1])
        out.append(got)
    return out


@given(
    st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=30),
    st.lists(st.integers(1, 7), min_size=1, max_size=30),
    st.data(),
)
def test_digests_set_a_list_at_a_time_are_those_set_row_by_row(
    lines: list[tuple[bool, bool, bool]], cuts: list[int], data: st.DataObject
) -> None:
    """Each batch row is a parsed row (taken or not: ``positions``) or a malformed line;
    digested or not. Whatever lists the rows come in, each row gets the digest it got when
    they came one by one."""
    kinds = [(2 + i, parsed, taken, ok) for i, (parsed, taken, ok) in enumerate(lines)]
    batch = [k for k in kinds if k[1]]
    n = len(batch)
    pairs = data.draw(st.lists(st.tuples(_U64, _U64), min_size=n, max_size=n))
    seen = Seen(
        "c.csv",
        np.array([k[0] for k in batch], dtype=np.int64),
        np.array(pairs, dtype=np.uint64).reshape(n, 2),
        np.array([k[3] for k in batch], dtype=bool),
        np.full(n, -1, dtype=np.int64),
    )
    positions = [i for i, k in enumerate(batch) if k[2]]
    wanted = {batch[i][0] for i in positions}
    rows = [  # the taken rows and the malformed lines, in line order
        PreparedRow(SourceRow("c.csv", k[0], {}), RowStatus.VALID)
        for k in kinds
        if k[0] in wanted or not k[1]
    ]
    want = _one_by_one(rows, seen, positions)
    blocks, at = [], 0
    for size in cuts:
        blocks.append(rows[at : at + size])
        at += size
    blocks = [b for b in blocks if b] + ([rows[at:]] if rows[at:] else [])
    out = list(_with_digests(iter(blocks), seen, np.array(positions, dtype=np.int64)))
    assert out == blocks
    assert [r.digest for r in rows] == want

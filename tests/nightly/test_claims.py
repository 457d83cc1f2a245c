"""The unchanged rows' match keys of a database-mode step (recordsync.nightly.claims): a
key is found exactly when an unchanged row (snapshot rows ``pos``) has it, with that row's
ledger key, whatever the snapshot's batches and the index's blocks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.nightly import claims
from recordsync.nightly.claims import Claims
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.state.snapshots import Snapshot

ROW = st.tuples(
    st.sampled_from(["email", "name", None]),
    st.one_of(st.none(), st.sampled_from(["a@x.io", "b@x.io", "Acme", "c:d", ""])),
)


def snapshot(rows: list[tuple[str | None, str | None]], chunk: int) -> Snapshot:
    n = len(rows)
    table = pa.table(
        {
            "d0": pa.array(np.arange(n, dtype=np.uint64)),
            "d1": pa.array(np.arange(n, dtype=np.uint64)),
            "key": pa.array([f"k{i}" for i in range(n)], pa.string()),
            "match_by": pa.array([r[0] for r in rows], pa.string()),
            "match_value": pa.array([r[1] for r in rows], pa.string()),
            "record_id": pa.array(range(1, n + 1), pa.int64()),
        }
    )
    return Snapshot(pa.Table.from_batches(table.to_batches(max_chunksize=chunk)))


@settings(max_examples=60)
@given(
    rows=st.lists(ROW, max_size=30),
    picks=st.lists(st.booleans(), max_size=30),
    chunk=st.integers(1, 8),
    block=st.integers(1, 9),
    asked=st.lists(ROW, max_size=8),
)
def test_a_match_key_is_found_exactly_when_an_unchanged_row_has_it(
    rows: list[tuple[str | None, str | None]],
    picks: list[bool],
    chunk: int,
    block: int,
    asked: list[tuple[str | None, str | None]],
) -> None:
    pos = np.array([i for i in range(len(rows)) if i < len(picks) and picks[i]], np.int64)
    want: dict[str, set[str]] = {}
    for i in pos:
        by, value = rows[i]
        if by is not None and value is not None:
            want.setdefault(f"{by}:{value}", set()).add(f"k{i}")
    old = claims.SNAPSHOT_FLUSH_ROWS
    claims.SNAPSHOT_FLUSH_ROWS = block  # the index made in several blocks
    try:
        snap = snapshot(rows, chunk) if rows else snapshot([(None, None)], 1)
        guard = Claims(snap, UnchangedRows.of(len(snap), pos))
        for by, value in [*rows, *asked]:
            if by is None or value is None:
                continue
            match_key = f"{by}:{value}"
            got = guard.owner(match_key)
            if match_key in want:
                assert got in want[match_key]
            else:
                assert got is None
    finally:
        claims.SNAPSHOT_FLUSH_ROWS = old


def test_the_index_is_one_sorted_number_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    rows: list[Any] = [("email", f"u{i}@x.io") for i in range(50)] + [("email", None)] * 5
    guard = Claims(snapshot(rows, 7), UnchangedRows.every(55))
    monkeypatch.setattr(claims, "SNAPSHOT_FLUSH_ROWS", 16)
    assert guard.owner("email:u7@x.io") == "k7"
    index = guard._index
    assert index is not None and index.dtype == np.uint64 and len(index) == 50
    assert bool(np.all(index[:-1] <= index[1:]))
    assert sorted(int(v) & 0xFFFFFFFF for v in index) == list(range(50))

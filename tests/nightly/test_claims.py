"""The unchanged rows' match keys of a database-mode step (recordsync.nightly.claims): a
key is found exactly when an unchanged row (snapshot rows ``pos``) has it, with the ledger
key of the first such row, whatever the snapshot's batches and form; a list of rows read is
checked with one read of the snapshot, and a row is held ``merged`` exactly when its match
key is found."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.claims import SCANS_BEFORE_INDEX, Claims
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.state.snapshot_codec import encode
from recordsync.state.snapshots import Snapshot

VALUES = ["a@x.io", "b@x.io", "Acme", "c:d", "", "k1", "k2"]
ROW = st.tuples(
    st.sampled_from(["email", "name", "id", "a:b", None]),
    st.one_of(st.none(), st.sampled_from(VALUES)),
)


def snapshot(rows: list[tuple[str | None, str | None]], chunk: int, compact: bool) -> Snapshot:
    n = len(rows)
    table = pa.table(
        {
            "d0": pa.array(np.arange(n, dtype=np.uint64)),
            "d1": pa.array(np.arange(n, dtype=np.uint64)),
            # some ledger keys are their row's match key (the compact form stores those once)
            "key": pa.array(
                [f"{r[0]}:{r[1]}" if i % 3 == 0 else f"k{i}" for i, r in enumerate(rows)],
                pa.string(),
            ),
            "match_by": pa.array([r[0] for r in rows], pa.string()),
            "match_value": pa.array([r[1] for r in rows], pa.string()),
            "record_id": pa.array(range(1, n + 1), pa.int64()),
        }
    )
    batches = table.to_batches(max_chunksize=chunk)
    if compact:
        return Snapshot(pa.Table.from_batches([encode(b) for b in batches]))
    return Snapshot(pa.Table.from_batches(batches, schema=table.schema))


def reference(
    snap_rows: list[tuple[str | None, str | None]], keys: list[str], pos: list[int]
) -> dict[str, str]:
    """The owner of each match key: the first unchanged row (in snapshot order) having it."""
    out: dict[str, str] = {}
    for i in pos:
        by, value = snap_rows[i]
        if by is not None and value is not None:
            out.setdefault(f"{by}:{value}", keys[i])
    return out


def prepared(by: str | None, value: str | None, status: RowStatus) -> PreparedRow:
    return PreparedRow(SourceRow("a.csv", 1, {}), status, None, by, value, key="x")


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(ROW, min_size=1, max_size=30),
    picks=st.lists(st.booleans(), max_size=30),
    chunk=st.integers(1, 8),
    compact=st.booleans(),
    asked=st.lists(ROW, max_size=8),
    invalid=st.lists(st.booleans(), max_size=40),
)
def test_a_row_is_held_exactly_when_an_unchanged_row_has_its_match_key(
    rows: list[tuple[str | None, str | None]],
    picks: list[bool],
    chunk: int,
    compact: bool,
    asked: list[tuple[str | None, str | None]],
    invalid: list[bool],
) -> None:
    pos = [i for i in range(len(rows)) if i < len(picks) and picks[i]]
    snap = snapshot(rows, chunk, compact)
    keys = snap.table.column("key").to_pylist()
    want = reference(rows, keys, pos)
    guard = Claims(snap, UnchangedRows.of(len(snap), np.array(pos, np.int64)))
    queries = [(by, value) for by, value in [*rows, *asked] if by is not None and value is not None]
    for by, value in queries:
        assert guard.owner(f"{by}:{value}") == want.get(f"{by}:{value}")
    assert guard.owners([f"{b}:{v}" for b, v in queries]) == {
        f"{b}:{v}": want[f"{b}:{v}"] for b, v in queries if f"{b}:{v}" in want
    }
    read = [
        prepared(
            by, value, RowStatus.INVALID if i < len(invalid) and invalid[i] else RowStatus.VALID
        )
        for i, (by, value) in enumerate([*asked, *rows])
    ]
    before = guard.scans
    guard.hold(read)
    # one read of the snapshot at most, or the index made and one read for the keys that
    # two unchanged rows hold
    assert guard.scans - before <= 2
    for r in read:
        owner = want.get(f"{r.match_by}:{r.match_value}")
        held = r.match_by is not None and r.match_value is not None and owner is not None
        if r.status is RowStatus.INVALID:
            continue
        assert (r.status is RowStatus.MERGED) == held
        if held:
            assert r.error is not None and repr(owner) in r.error


def test_a_list_without_a_row_to_check_reads_nothing() -> None:
    rows: list[Any] = [("email", f"u{i}@x.io") for i in range(50)]
    guard = Claims(snapshot(rows, 7, True), UnchangedRows.every(50))
    guard.hold(
        [prepared("email", None, RowStatus.VALID), prepared("email", "u1@x.io", RowStatus.INVALID)]
    )
    assert guard.scans == 0
    new = prepared("email", "new@x.io", RowStatus.VALID)
    claimed = prepared("email", "u7@x.io", RowStatus.VALID)
    guard.hold([new, claimed])
    assert guard.scans == 1
    assert new.status is RowStatus.VALID and claimed.status is RowStatus.MERGED
    assert "'k7'" in (claimed.error or "")


def test_the_snapshot_is_read_once_for_every_list_unless_a_key_is_held_twice() -> None:
    rows: list[Any] = [("email", f"u{i}@x.io") for i in range(200)]
    rows[151] = ("email", "u3@x.io")  # an unchanged row holding u3's key too
    guard = Claims(snapshot(rows, 16, True), UnchangedRows.every(200))
    lists = [[prepared("email", f"u{i}@x.io", RowStatus.VALID)] for i in range(5, 200, 7)]
    for read in lists:
        guard.hold([*read, prepared("email", "new@x.io", RowStatus.VALID)])
        assert read[0].status is RowStatus.MERGED
    # the first lists read the snapshot each, then the index of the match keys is made once
    assert guard.scans == SCANS_BEFORE_INDEX + 1
    twice = prepared("email", "u3@x.io", RowStatus.VALID)
    guard.hold([twice])
    assert guard.scans == SCANS_BEFORE_INDEX + 2  # a key two rows hold: read to name the first
    assert twice.status is RowStatus.MERGED
    first, later = guard.snapshot.column("key", np.array([3, 151]))
    assert first != later and guard.owner("email:u3@x.io") == first

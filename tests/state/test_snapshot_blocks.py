"""A snapshot (recordsync.state.snapshots) is read a block of rows at a time: its key hashes
and the rows taken from it are those made from the whole table at once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from recordsync.state.snapshots import Snapshot


def table() -> pa.Table:
    n = 23
    bys = ["email" if i % 3 else None for i in range(n)]
    values = [f"v{i % 7}@x.example" if i % 5 else None for i in range(n)]
    return pa.table(
        {
            "d0": pa.array(np.arange(n, dtype=np.uint64)),
            "d1": pa.array(np.arange(n, dtype=np.uint64)),
            "match_by": pa.array(bys, pa.string()),
            "match_value": pa.array(values, pa.string()),
            "key": pa.array([f"k{i % 4}" if i % 6 else None for i in range(n)], pa.string()),
        }
    )


def test_key_hashes_made_in_blocks_are_those_made_at_once() -> None:
    whole = Snapshot(table())
    want = (whole.match_key_hashes(), whole.key_hashes())
    blocks = Snapshot(pa.Table.from_batches(table().to_batches(max_chunksize=4)))
    # one record batch of the file at a time, in file order, each batch's own rows
    parts = list(blocks.hash_batches("key"))
    assert [start for start, _, _ in parts] == list(range(0, 23, 4))
    assert [len(has) for _, _, has in parts] == [4, 4, 4, 4, 4, 3]
    got = (blocks.match_key_hashes(), blocks.key_hashes())
    for (h1, r1), (h2, r2) in zip(got, want, strict=True):
        assert h1.tolist() == h2.tolist() and r1.tolist() == r2.tolist()
    by_row = dict(zip(want[1][1].tolist(), want[1][0].tolist(), strict=True))
    assert by_row[1] == hash("k1") and 0 not in by_row  # row 0 has no key
    assert len(want[0][0]) == sum(1 for i in range(23) if i % 3 and i % 5)  # by and value


def test_rows_taken_batch_by_batch_are_those_the_whole_table_gives() -> None:
    """In any order, repeated, across the file's record batches (here 5 of 5 rows or less)."""
    whole = table()
    snap = Snapshot(pa.Table.from_batches(whole.to_batches(max_chunksize=5)))
    assert len(snap.table.to_batches()) == 5
    rng = np.random.default_rng(5)
    cases = [
        np.arange(23),
        np.array([22, 0, 7, 7, 13, 1]),
        rng.integers(0, 23, 40),
        np.array([4, 3, 2]),
        np.zeros(0, dtype=np.int64),
    ]
    for idx in cases:
        idx = idx.astype(np.int64)
        want = whole.take(pa.array(idx, pa.int64()))
        assert snap.take(idx).to_pylist() == want.to_pylist()
        assert snap.take(idx, ["key", "match_by"]).to_pylist() == want.select(
            ["key", "match_by"]
        ).to_pylist()
        assert snap.column("match_value", idx) == want.column("match_value").to_pylist()

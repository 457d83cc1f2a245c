"""A snapshot's key hashes (recordsync.state.snapshots) are made a block of rows at a time:
the same sorted hashes and rows as from every key at once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from recordsync.state import snapshots
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


def test_key_hashes_made_in_blocks_are_those_made_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = Snapshot(table())
    want = (whole.match_key_hashes(), whole.key_hashes())
    monkeypatch.setattr(snapshots, "FLUSH_ROWS", 4)
    blocks = Snapshot(table())
    got = (blocks.match_key_hashes(), blocks.key_hashes())
    for (h1, r1), (h2, r2) in zip(got, want, strict=True):
        assert h1.tolist() == h2.tolist() and r1.tolist() == r2.tolist()
    by_row = dict(zip(want[1][1].tolist(), want[1][0].tolist(), strict=True))
    assert by_row[1] == hash("k1") and 0 not in by_row  # row 0 has no key
    assert len(want[0][0]) == sum(1 for i in range(23) if i % 3 and i % 5)  # by and value

"""The sample of rows found unchanged kept with their cells: uniform, bounded, one copy of
each sampled row, found again by the blocks holding them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from recordsync.prepare.cell_sample import CellSample
from recordsync.read import SourceBatch


def batch(first: int, n: int) -> SourceBatch:
    lines = np.arange(first, first + n, dtype=np.int64)
    cells = pa.record_batch({"Name": [f"row {i}" for i in lines.tolist()]})
    return SourceBatch("f.csv", cells, lines)


def test_keeps_at_most_size_rows_and_only_rows_found() -> None:
    sample = CellSample(5, seed=1)
    for first in (2, 102, 202):
        sb = batch(first, 100)
        found = sb.rows % 2 == 0  # odd lines were not found unchanged
        sample.offer(sb, found)
    got = sample.cells_in("f.csv", np.arange(2, 302))
    assert got is not None and len(got) == 5
    for line, cells in got.items():
        assert line % 2 == 0 and cells.num_rows == 1
        assert cells.column("Name").to_pylist() == [f"row {line}"]
    assert sample.cells_in("other.csv", np.arange(2, 302)) is None
    some = sorted(got)[:2]
    assert set(sample.cells_in("f.csv", np.array(some)) or {}) == set(some)


def test_uniform_over_batches() -> None:
    counts: Counter[int] = Counter()
    runs = 3000
    for seed in range(runs):
        sample = CellSample(3, seed=seed)
        for first in (0, 10, 20):
            sb = batch(first, 10)
            sample.offer(sb, np.ones(10, dtype=bool))
        counts.update((sample.cells_in("f.csv", np.arange(30)) or {}).keys())
    expected = runs * 3 / 30
    assert set(counts) == set(range(30))
    assert all(abs(c - expected) < expected * 0.3 for c in counts.values()), counts


def test_size_zero_keeps_nothing() -> None:
    sample = CellSample(0)
    sample.offer(batch(2, 10), np.ones(10, dtype=bool))
    assert sample.cells_in("f.csv", np.arange(2, 12)) is None

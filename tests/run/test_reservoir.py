"""The reservoir sample of a stream given in runs: every item while it fills, then exactly
its size, uniform over the stream."""

from __future__ import annotations

import random
from collections import Counter

from recordsync.run.reservoir import Reservoir
from recordsync.run.written import Sampled


def test_a_reservoir_takes_every_item_until_full_then_exactly_size() -> None:
    r = Reservoir(5, random.Random(1))
    assert r.wants(3) == [0, 1, 2]
    for i in range(3):
        r.take(Sampled("s", "f", i, "created", i))
    for chunk in range(200):
        for p in r.wants(100):
            r.take(Sampled("s", "f", 3 + chunk * 100 + p, "created", 0))
    assert len(r.items) == 5 and r.seen == 20_003


def test_a_reservoir_is_uniform() -> None:
    """Every position of a 50-item stream is kept about equally often (size 5: 10%)."""
    counts: Counter[int] = Counter()
    rng = random.Random(7)
    runs = 4000
    for _ in range(runs):
        r = Reservoir(5, rng)
        position = 0
        for n in (7, 13, 30):
            for p in r.wants(n):
                r.take(Sampled("s", "f", position + p, "created", 0))
            position += n
        counts.update(s.source_row for s in r.items)
    expected = runs * 5 / 50
    assert set(counts) == set(range(50))
    assert all(abs(c - expected) < expected * 0.25 for c in counts.values()), counts

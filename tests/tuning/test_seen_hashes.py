"""SeenHashes (recordsync.tuning.seen_hashes) answers as a Python set (the reference), in
memory and once its hashes went to disk: partitions, sorted parts and tails, a Bloom filter
from tiny to large (a tiny one lets nearly every hash through to the files)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.tuning import sizes
from recordsync.tuning.seen_hashes import SeenHashes

HASH = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-40, 40),  # the same few again and again
    st.sampled_from([-(2**63), 2**63 - 1, 0, -1, 1 << 62, -(1 << 62)]),
)


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.tuples(st.lists(HASH, max_size=6), st.lists(HASH, max_size=4)), max_size=40),
    block=st.integers(1, 9),
    bloom=st.sampled_from([8, 64, 1 << 16]),
    parts=st.integers(0, 3),
)
def test_answers_as_a_set(
    steps: list[tuple[list[int], list[int]]], block: int, bloom: int, parts: int
) -> None:
    old = sizes.DUPLICATE_PARTITION_BITS
    sizes.DUPLICATE_PARTITION_BITS = parts or 1
    try:
        seen = SeenHashes(block, bloom)
    finally:
        sizes.DUPLICATE_PARTITION_BITS = old
    ref: set[int] = set()
    for added, asked in steps:
        for h in added:
            seen.add(h)
            ref.add(h)
        assert seen.found([*asked, *added]) == ref & {*asked, *added}
        assert len(seen) >= len(ref)  # a hash added again after it went to disk counts twice
    seen.close()
    assert seen.found(list(ref)) == set()


def test_many_hashes_through_every_partition() -> None:
    """50,000 random hashes, 1,000 held in memory: tails sorted into their parts many times."""
    import random

    rng = random.Random(7)
    values = [rng.getrandbits(64) - 2**63 for _ in range(50_000)]
    seen = SeenHashes(1_000, 1 << 12)
    for v in values[:40_000]:
        seen.add(v)
    assert seen.spilled >= 39_000
    assert seen.found(values) == set(values[:40_000])

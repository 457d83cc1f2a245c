"""A snapshot's digests sorted on disk (``SortedDigests``): lookups agree with a plain search
over every digest, across pages of the file, runs of equal first halves and groups of
queries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.state import digest_runs
from recordsync.state.digest_runs import SortedDigests
from recordsync.tuning import sizes


def _batches(d0: Any, d1: Any, per: int) -> list[pa.RecordBatch]:
    return [
        pa.record_batch({"d0": pa.array(d0[i : i + per]), "d1": pa.array(d1[i : i + per])})
        for i in range(0, len(d0), per)
    ]


def _expected(d0: Any, d1: Any, q0: Any, q1: Any) -> list[set[int]]:
    rows: dict[tuple[int, int], set[int]] = {}
    for r, key in enumerate(zip(d0.tolist(), d1.tolist(), strict=True)):
        rows.setdefault(key, set()).add(r)
    return [rows.get(k, set()) for k in zip(q0.tolist(), q1.tolist(), strict=True)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3 * digest_runs._PAGE + 17),
    spread=st.sampled_from([4, 600, 2**64 - 1]),
    seed=st.integers(0, 2**32 - 1),
    group=st.sampled_from([1, 7, 1024]),
)
def test_find_agrees_with_a_plain_search(n: int, spread: int, seed: int, group: int) -> None:
    """Digests drawn from a narrow range (long runs of equal first halves, across page
    edges) or the whole one; queries that are there, and ones that are not (below the first,
    above the last, between): each answer is a row holding that digest, or -1 where none
    does."""
    rng = np.random.default_rng(seed)
    d0 = rng.integers(0, spread, n, dtype=np.uint64, endpoint=True)
    d1 = rng.integers(0, 3, n, dtype=np.uint64)
    pick = rng.integers(0, n, 60)
    q0 = np.concatenate(
        [
            d0[pick],
            rng.integers(0, spread, 60, dtype=np.uint64, endpoint=True),
            np.array([0, 2**64 - 1], dtype=np.uint64),
        ]
    )
    q1 = np.concatenate([d1[pick], rng.integers(0, 3, 62, dtype=np.uint64)])
    old = sizes.DIGEST_FIND_ROWS
    sizes.DIGEST_FIND_ROWS = group
    try:
        found = SortedDigests(_batches(d0, d1, 333)).find(q0, q1)
    finally:
        sizes.DIGEST_FIND_ROWS = old
    for got, want in zip(found.tolist(), _expected(d0, d1, q0, q1), strict=True):
        assert (got in want) if want else got == -1


def test_lookups_read_the_pages_they_need_not_the_mapped_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Distinct digests: every query is answered from the pages read for it (a run of equal
    first halves is the only reason to search the mapped file)."""
    rng = np.random.default_rng(7)
    d0 = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    d1 = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    index = SortedDigests(_batches(d0, d1, 1000))
    searched: list[int] = []
    monkeypatch.setattr(index, "_among_equal", lambda a, b: searched.append(1) or -2)
    monkeypatch.setattr(sizes, "DIGEST_FIND_ROWS", 100)
    assert index.find(d0[:1050], d1[:1050]).tolist() == list(range(1050))
    missing = index.find(d0[:50] + np.uint64(1), d1[:50])
    assert missing.tolist() == [-1] * 50 and not searched


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 2 * digest_runs._PAGE + 5),
    spread=st.sampled_from([4, 600, 2**64 - 1]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_file_is_in_digest_order_with_equal_digests_in_row_order(
    n: int, spread: int, seed: int
) -> None:
    """Whichever way a partition is sorted (by the first half alone when no two are equal,
    else by both), the file holds every (d0, d1, row) ordered by digest, then row; and the
    rows whose digest is listed twice are found."""
    rng = np.random.default_rng(seed)
    d0 = rng.integers(0, spread, n, dtype=np.uint64, endpoint=True)
    d1 = rng.integers(0, 3, n, dtype=np.uint64)
    got = SortedDigests(_batches(d0, d1, 97))
    rows = np.arange(n)
    order = np.lexsort((rows, d1, d0))
    assert got.d0.tolist() == d0[order].tolist()
    assert got.d1.tolist() == d1[order].tolist()
    assert got.rows.tolist() == rows[order].tolist()
    counts: dict[tuple[int, int], int] = {}
    for key in zip(d0.tolist(), d1.tolist(), strict=True):
        counts[key] = counts.get(key, 0) + 1
    twice = [r for r in range(n) if counts[(int(d0[r]), int(d1[r]))] > 1]
    assert got.twice.tolist() == twice

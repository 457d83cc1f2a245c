"""The rows with a record of their own (recordsync.prepare.owners), asked batch by batch as
the merge scan reads the source again: the same answers as from every identity at once,
with the first pass's log in memory or on disk, questions in or out of order, batches cut
elsewhere than the log's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.prepare.dups import ROW_BITS
from recordsync.prepare.owners import SnapshotOwners
from recordsync.prepare.seen_log import Seen, SeenLog


def log_of(found: list[int], batch: int, limit: int, files: int = 2) -> SeenLog:
    """``found`` (a snapshot row per source row, -1: not found) as a log of ``batch``-row
    batches, the rows split over ``files`` files in order."""
    log = SeenLog(limit=limit)
    per_file = -(-len(found) // files)
    for f in range(files):
        part = found[f * per_file : (f + 1) * per_file]
        for i in range(0, len(part), batch):
            rows = np.arange(i, min(i + batch, len(part)), dtype=np.int64) + 2  # line numbers
            log.append(Seen(f"f{f}", rows, None, None, np.array(part[i : i + batch], np.int64)))
    return log


def expected(found: list[int], files: int, demoted: set[int]) -> set[int]:
    per_file = -(-len(found) // files)
    out = set()
    for i, at in enumerate(found):
        f, row = divmod(i, per_file)
        rid = (f << ROW_BITS) | (row + 2)
        if at >= 0 and rid not in demoted:
            out.add(rid)
    return out


def every_id(n: int, files: int) -> np.ndarray:  # type: ignore[type-arg]
    per_file = -(-n // files)
    return np.array(
        [(i // per_file << ROW_BITS) | (i % per_file + 2) for i in range(n)], dtype=np.int64
    )


@settings(max_examples=60, deadline=None)
@given(
    found=st.lists(st.integers(-1, 5), min_size=0, max_size=60),
    batch=st.integers(1, 9),
    ask=st.integers(1, 11),
    limit=st.sampled_from([3, 10_000]),
    shuffle=st.booleans(),
    demote=st.sets(st.integers(0, 59), max_size=5),
)
def test_walked_answers_are_those_of_every_identity_at_once(
    found: list[int], batch: int, ask: int, limit: int, shuffle: bool, demote: set[int]
) -> None:
    ids = every_id(len(found), 2)
    demoted = {int(ids[i]) for i in demote if i < len(ids)}
    log = log_of(found, batch, limit)
    files = {"f0": 0, "f1": 1}
    owners = SnapshotOwners(log, files, np.array(sorted(demoted), dtype=np.int64))
    want = expected(found, 2, demoted)
    parts = [ids[i : i + ask] for i in range(0, len(ids), ask)]
    if shuffle:  # out of source order: still right
        parts = parts[::-1]
    for part in parts:
        got = owners.member(part)
        assert got.tolist() == [int(i) in want for i in part]
    owners.close()
    assert set(owners.everything().tolist()) == want
    # the log is left whole for the second pass
    assert [len(s.rows) for s in log] == [len(s.rows) for s in log_of(found, batch, limit)]


def test_in_order_the_walk_holds_about_a_batch_and_reads_the_log_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = [i % 3 - 1 for i in range(10_000)]  # a third not found
    log = log_of(found, 100, limit=500, files=1)
    assert log.spilled
    reads = 0
    real_iter = SeenLog.__iter__

    def counting(self: SeenLog):  # type: ignore[no-untyped-def]
        nonlocal reads
        reads += 1
        yield from real_iter(self)

    monkeypatch.setattr(SeenLog, "__iter__", counting)
    owners = SnapshotOwners(log, {"f0": 0}, np.zeros(0, dtype=np.int64))
    ids = every_id(len(found), 1)
    most = 0
    for i in range(0, len(ids), 250):
        got = owners.member(ids[i : i + 250])
        assert got.tolist() == [f >= 0 for f in found[i : i + 250]]
        most = max(most, len(owners._held))
    assert owners._all is None  # never every identity at once
    assert most <= 100  # what is held between questions: at most a batch of the log
    assert reads == 1
    owners.close()

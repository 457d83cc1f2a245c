"""Finding source rows in a snapshot (:mod:`recordsync.state.snapshots`) by their digests.

An unchanged export comes in the order the last run wrote its snapshot, so each row is
first looked for where that order puts it (the row after the last one matched: one vectorised
compare per batch); the rows not found there are looked for by binary search in the sorted
digests. Either way a row matches the one snapshot row with its digest, and none when the
snapshot lists that digest twice (it would vouch for two rows). Also here: the Python
hashes of keys (duplicate detection) and taking rows from the snapshot's record batches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.state.batch_marks import run_digest
from recordsync.state.digest_runs import SortedDigests
from recordsync.tuning import sizes

Digests = npt.NDArray[np.uint64]

_NEAR = 3
"""Rows either side of its place a row is looked for at (:meth:`DigestIndex.match`)."""
_SHIFTS = (0, -1, 1, -2, 2, -3, 3)
_SCANNED = 64
"""Digests at most looked up at once by reading the file's (:meth:`DigestIndex._scanned`)."""


class DigestIndex:
    """The digests of a snapshot (halves ``d0``, ``d1`` in file order, from its record
    ``batches``) and the order that sorts them (no sorted copy: memory stays 24 bytes a
    row, as the file's digests and one permutation). Past ``memory_rows`` rows, none of it
    in memory: the file's own digests are read where a row is expected, and the sorted
    ones come from a file (:class:`.digest_runs.SortedDigests`)."""

    def __init__(
        self,
        batches: list[pa.RecordBatch],
        memory_rows: int | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        table = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None
        n = table.num_rows if table is not None else 0
        self._disk: SortedDigests | None = None
        self._large = False
        """Past ``memory_rows``: the digests sorted on disk, once a row is looked for
        (:meth:`_sorted_on_disk`); a run of rows found by :meth:`match_run` needs none."""
        self._batches, self._release = batches, release
        self._scans = sizes.DIGEST_SCANS
        """Look-ups of a few digests left to make by reading the file's digests once each,
        before the digests are sorted on disk (:meth:`_scanned`)."""
        self._table = table
        self._next = 0  # the file row where the next source row is expected
        self._twice: npt.NDArray[np.bool_] | None = None  # file order: digest listed twice
        limit = sizes.SNAPSHOT_MEMORY_ROWS if memory_rows is None else memory_rows
        if table is not None and n > limit:
            self._large = True
            self._size = n
            return
        d0 = _column(table, "d0")
        d1 = _column(table, "d1")
        self._size = n
        s0 = np.sort(d0)  # a sort of the values alone: several times faster than their order
        self._shared = n > 1 and bool((s0[1:] == s0[:-1]).any())
        del s0
        self._d0, self._d1 = d0, d1
        self._order: npt.NDArray[np.int64] | None = None
        """The order that sorts the digests: made when a row is first looked for out of the
        snapshot's order (an unchanged export in its order never needs it)."""
        if self._shared:  # first halves shared (almost never): ordered by the second too
            self._order = np.lexsort((d1, d0)).astype(np.int64)
        if n > 1 and self._shared:
            a, b = self._sorter[1:], self._sorter[:-1]
            same = (d0[a] == d0[b]) & (d1[a] == d1[b])
            if same.any():
                self._twice = np.zeros(n, dtype=bool)
                self._twice[a[same]] = True
                self._twice[b[same]] = True

    @property
    def _sorter(self) -> npt.NDArray[np.int64]:
        if self._order is None:  # the first halves differ: any sort gives this one order
            self._order = np.argsort(self._d0).astype(np.int64, copy=False)
        return self._order

    @property
    def on_disk(self) -> bool:
        return self._large

    def _sorted_on_disk(self) -> SortedDigests:
        if self._disk is None:
            self._disk = SortedDigests(self._batches, self._release)
        return self._disk

    def match(self, digests: Digests, ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """Per row (in source order, batch after batch): the snapshot row with the same
        digest, or -1 (also where ``ok`` is False: the row has no digest).

        A row is looked for at its place first: the snapshot row after the last one found,
        counting the rows since, then up to :data:`_NEAR` rows either side of it (rows
        inserted, removed or missing from the snapshot before it shift it by as many). A row
        found there is that row, even if another snapshot row has its digest too (identical
        rows that each have a record); only a row looked up by its digest elsewhere (in the
        sorted digests, sorted then if not before) is refused one the snapshot lists twice."""
        n, size = len(digests), self._size
        if n == 0 or size == 0:
            return np.full(n, -1, dtype=np.int64)
        q0, q1 = digests[:, 0], digests[:, 1]
        place = self._next + np.arange(n, dtype=np.int64)
        lo = max(int(place[0]) - _NEAR, 0)
        hi = min(int(place[-1]) + _NEAR, size - 1)
        found = np.full(n, -1, dtype=np.int64)
        todo = np.flatnonzero(ok)
        if lo <= hi:
            w0, w1 = self._window(lo, hi)
            for shift in _SHIFTS:
                if not len(todo):
                    break
                at = place[todo] + shift
                inside = (at >= lo) & (at <= hi)
                i = np.clip(at, lo, hi) - lo
                hit = inside & (w0[i] == q0[todo]) & (w1[i] == q1[todo])
                found[todo[hit]] = at[hit]
                todo = todo[~hit]
        if len(todo):
            found[todo] = self._looked_up(q0[todo], q1[todo])
        matched = np.flatnonzero(found >= 0)
        if len(matched):
            self._next = int(found[matched[-1]]) + 1
        return found

    def _window(self, lo: int, hi: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """The digests of snapshot rows ``lo`` to ``hi`` (inclusive), halves apart."""
        if not self._large:
            return self._d0[lo : hi + 1], self._d1[lo : hi + 1]
        assert self._table is not None
        window = self._table.slice(lo, hi + 1 - lo)
        return _column(window, "d0"), _column(window, "d1")

    def _looked_up(
        self, q0: npt.NDArray[np.uint64], q1: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.int64]:
        """Per digest: the snapshot row that has it, found in the sorted digests, or -1 (also
        for a digest the snapshot lists twice)."""
        if self._large and self._disk is None and self._scans > 0 and len(q0) <= _SCANNED:
            self._scans -= 1
            return self._scanned(q0, q1)
        if self._large:
            disk = self._sorted_on_disk()
            found = disk.find(q0, q1)
            disk.release()
            if len(disk.twice):
                found[np.isin(found, disk.twice)] = -1
            return found
        size = self._size
        pos = np.searchsorted(self._d0, q0, sorter=self._sorter)
        row = self._sorter[np.minimum(pos, size - 1)]
        same = (self._d0[row] == q0) & (self._d1[row] == q1)
        found = np.where(same, row, -1)
        if self._shared:  # the second half may be further along a run of equal firsts
            for j in np.flatnonzero(~same & (self._d0[row] == q0)).tolist():
                found[j] = self._among_equal(int(pos[j]), q0[j], q1[j])
        if self._twice is not None:
            found[(found >= 0) & self._twice[np.maximum(found, 0)]] = -1
        return found

    def match_run(self, n: int, run: bytes, skip: int = 0) -> tuple[int, Digests] | None:
        """A span of ``n`` rows whose digests give the run digest ``run``
        (:mod:`.batch_marks`): if the ``n`` snapshot rows where the next row is expected give
        it too, those rows' first index and their digests, shape ``(n, 2)``; the next row is
        then expected after them. None otherwise (nothing moves). ``skip``: the rows just
        before the span that were not found (changed since): their old rows may lie between
        the last row found and the span's, so the span is also looked for that many rows
        further on.

        As in :meth:`match`, rows found at their place are those rows, whether or not
        another snapshot row has the same digest: nothing is sorted for a run found this way,
        and an unchanged export never sorts its snapshot."""
        for lo in (self._next, self._next + skip) if skip > 0 else (self._next,):
            if n <= 0 or lo + n > self._size:
                return None
            if not self._large:
                d0, d1 = self._d0[lo : lo + n], self._d1[lo : lo + n]
            else:
                assert self._table is not None
                window = self._table.slice(lo, n)
                d0, d1 = _column(window, "d0"), _column(window, "d1")
            if run_digest(d0, d1) == run:
                self._next = lo + n
                return lo, np.column_stack((d0, d1))
        return None

    def _scanned(
        self, q0: npt.NDArray[np.uint64], q1: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.int64]:
        """:meth:`_looked_up` of a few digests by reading the file's digests once, a record
        batch at a time (its pages dropped after each): a few milliseconds a million rows,
        where sorting them on disk takes about 0.25 s. A digest found on two rows or more
        is listed twice: none."""
        found = np.full(len(q0), -1, dtype=np.int64)
        seen = np.zeros(len(q0), dtype=np.int64)
        start = 0
        for batch in self._batches:
            d0 = _column(batch, "d0")
            rows = np.flatnonzero(np.isin(d0, q0))
            if len(rows):
                d1 = _column(batch, "d1")
                for r in rows.tolist():
                    same = np.flatnonzero((q0 == d0[r]) & (q1 == d1[r]))
                    found[same] = start + r
                    seen[same] += 1
            start += batch.num_rows
            if self._release is not None:
                self._release()
        found[seen > 1] = -1
        return found

    def _among_equal(self, lo: int, h0: np.uint64, h1: np.uint64) -> int:
        hi = int(np.searchsorted(self._d0, h0, side="right", sorter=self._sorter))
        rows = self._sorter[lo:hi]
        k = int(np.searchsorted(self._d1[rows], h1))
        return int(rows[k]) if k < len(rows) and self._d1[rows[k]] == h1 else -1


def _column(table: pa.Table | pa.RecordBatch | None, name: str) -> npt.NDArray[np.uint64]:
    """A digest column of a snapshot table or record batch (none: empty)."""
    if table is None:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(table.column(name).to_numpy(), dtype=np.uint64)


def take_rows(
    table: pa.Table,
    batches: list[pa.RecordBatch],
    starts: npt.NDArray[np.int64],
    idx: npt.NDArray[np.int64],
    names: list[str] | None = None,
) -> pa.Table:
    """Rows ``idx`` (in that order) of ``table``'s columns ``names`` (None: all), taken from
    its record ``batches`` (first rows ``starts``) one batch at a time: Arrow's take on a
    whole table first concatenates every batch, a copy of it all."""
    idx = np.asarray(idx, dtype=np.int64)
    n = len(idx)
    if not n:
        return (table if names is None else table.select(names)).slice(0, 0)
    first = int(idx[0])
    if int(idx[-1]) - first == n - 1 and (n == 1 or bool((np.diff(idx) == 1).all())):
        # rows in the file's order, one after another (an unchanged export): a slice of the
        # record batches, nothing copied
        return (table if names is None else table.select(names)).slice(first, n)
    which = np.searchsorted(starts, idx, side="right") - 1
    order = np.argsort(which, kind="stable")
    parts: list[pa.RecordBatch] = []
    for seg in np.split(order, np.flatnonzero(np.diff(which[order])) + 1):
        c = int(which[seg[0]])
        batch = batches[c] if names is None else batches[c].select(names)
        parts.append(batch.take(pa.array(idx[seg] - starts[c])))
    out = pa.Table.from_batches(parts)
    if len(parts) > 1 and np.any(order[1:] < order[:-1]):  # back to the order of idx
        out = out.combine_chunks().take(pa.array(np.argsort(order)))
    return out


def key_hashes(keys: list[str | None]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Python hashes of the keys that are there (within one process), and which are."""
    has = np.fromiter((k is not None for k in keys), bool, len(keys))
    present = [k for k in keys if k is not None]
    return np.fromiter(map(hash, present), dtype=np.int64, count=len(present)), has

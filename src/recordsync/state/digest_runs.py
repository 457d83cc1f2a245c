"""A large snapshot's digests sorted on disk, for :class:`.snapshot_match.DigestIndex`.

Past ``sizes.SNAPSHOT_MEMORY_ROWS`` rows the index does not hold the
digests and their order in memory (24 bytes a row): each digest (both halves) and its
snapshot row are sorted into a temporary file, one 24-byte record each, through 64 partition
files by the top bits of the first half (a few MB sorted at a time, whatever the size).
A fence held in memory (the first digest of each page of 512 records: 16 kB per million rows)
names the page a query's digest is on, and a lookup reads just those pages with ``os.pread``,
``sizes.DIGEST_FIND_ROWS`` queries at a time: 12 kB a query at most, whatever the snapshot's
size. Binary searches over the memory-mapped file touched a dozen pages a query, and the
kernel maps 64 kB or more around each page touched: a batch of lookups on a 10M-row snapshot
held about 200 MB. The mapped file serves only a run of equal first halves (rare), its pages
dropped after (:meth:`release`). Digests listed twice are found while sorting
(:attr:`SortedDigests.twice`).
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.tuning import sizes

_PART_TYPE = np.uint8 if sizes.DIGEST_PARTITION_BITS <= 8 else np.int64
"""The type of a partition number."""

_PAGE = 512
"""Digests (first halves) a page of the file: 4 kB, the unit a lookup reads."""


class SortedDigests:
    """The digests of a snapshot's ``batches`` (halves ``d0``, ``d1``), sorted by (d0, d1) on
    disk: :attr:`d0`, :attr:`d1` and :attr:`rows` (the snapshot row of each)."""

    def __init__(
        self,
        batches: Iterable[pa.RecordBatch],
        release: Callable[[], None] | None = None,
        size: int | None = None,
    ) -> None:
        """``release``: drops the pages of ``batches`` read so far (a memory-mapped file's),
        called after each batch. ``batches`` is read once, in order (a generator: one batch
        held at a time); ``size``: their rows, when they are not a list to count."""
        if size is None:
            batches = list(batches)
            size = sum(b.num_rows for b in batches)
        n = size
        self.size = n
        file = tempfile.TemporaryFile(prefix="recordsync-digests-")  # noqa: SIM115
        twice: list[npt.NDArray[np.uint64]] = []
        fence: list[npt.NDArray[np.uint64]] = [np.zeros(0, np.uint64)]
        with file, tempfile.TemporaryDirectory(prefix="recordsync-digest-parts-") as tmp:
            parts = [Path(tmp) / f"{p}.bin" for p in range(1 << sizes.DIGEST_PARTITION_BITS)]
            _partition(batches, parts, release)
            file.truncate(3 * n * 8)
            at = 0
            for path in parts:
                if not path.exists():
                    continue
                rec = np.fromfile(path, dtype=np.uint64).reshape(-1, 3)
                path.unlink()
                rec = _sorted(rec)
                same = (rec[1:, 0] == rec[:-1, 0]) & (rec[1:, 1] == rec[:-1, 1])
                if same.any():
                    twice += [rec[1:, 2][same], rec[:-1, 2][same]]
                file.seek(at * 24)
                file.write(rec.tobytes())
                fence.append(rec[np.arange(-(-at // _PAGE) * _PAGE, at + len(rec), _PAGE) - at, 0])
                at += len(rec)
            file.flush()  # mapped, the file lives on (already unlinked) until unmapped
            self._map = mmap.mmap(file.fileno(), 3 * n * 8, access=mmap.ACCESS_READ)
            self._fd = os.dup(file.fileno())
        weakref.finalize(self, os.close, self._fd)
        self._fence = np.concatenate(fence)
        """The first digest of each page of the file, in memory (16 kB per million rows)."""
        every = np.frombuffer(self._map, dtype=np.uint64).reshape(-1, 3)
        self.d0, self.d1 = every[:, 0], every[:, 1]
        self.rows = every[:, 2].view(np.int64)
        self.twice = np.unique(np.concatenate([np.zeros(0, np.uint64), *twice])).view(np.int64)
        """Snapshot rows whose digest another row has too, sorted."""

    def find(self, q0: npt.NDArray[np.uint64], q1: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """Per query: a snapshot row with that digest, or -1 (the module's docstring says
        how)."""
        found = np.full(len(q0), -1, dtype=np.int64)
        step = sizes.DIGEST_FIND_ROWS
        for at in range(0, len(q0) if self.size else 0, step):
            found[at : at + step] = self._find(q0[at : at + step], q1[at : at + step])
        return found

    def _find(
        self, q0: npt.NDArray[np.uint64], q1: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.int64]:
        n = self.size
        # the last page whose first digest is not above the query: a row holding the query's
        # digest is on it, if any is (the rows on earlier pages are not above that first
        # digest, the next page's first is above the query); only where the first halves are
        # equal and the second differs may the run go on to another page
        page = np.maximum(np.searchsorted(self._fence, q0, side="right") - 1, 0)
        pages, which = np.unique(page, return_inverse=True)
        held = np.minimum(n - pages * _PAGE, _PAGE)
        read = np.zeros((len(pages), _PAGE, 3), dtype=np.uint64)
        for k, (p, m) in enumerate(zip(pages.tolist(), held.tolist(), strict=True)):
            read[k, :m] = np.frombuffer(
                os.pread(self._fd, 24 * m, 24 * _PAGE * p), dtype=np.uint64
            ).reshape(-1, 3)
        b0 = read[:, :, 0]
        lo = np.zeros(len(q0), dtype=np.int64)
        hi = held[which]
        while (open_ := lo < hi).any():  # a binary search within each query's page
            mid = (lo + hi) // 2
            below = open_ & (b0[which, np.minimum(mid, _PAGE - 1)] < q0)
            lo = np.where(below, mid + 1, lo)
            hi = np.where(open_ & ~below, mid, hi)
        inside = lo < held[which]
        at = np.minimum(lo, _PAGE - 1)
        first = inside & (b0[which, at] == q0)
        same = first & (read[which, at, 1] == q1)
        found = np.where(same, read[which, at, 2].view(np.int64), -1)
        for j in np.flatnonzero(first & ~same).tolist():  # a run of equal first halves
            found[j] = self._among_equal(q0[j], q1[j])
        return found

    def _among_equal(self, q0: np.uint64, q1: np.uint64) -> int:
        """The row of (q0, q1) among the digests whose first half is q0 (the mapped file,
        its pages dropped after): a run of equal first halves is rare (digests listed twice)."""
        try:
            lo = int(np.searchsorted(self.d0, q0))
            hi = int(np.searchsorted(self.d0, q0, side="right"))
            k = lo + int(np.searchsorted(self.d1[lo:hi], q1))
            return int(self.rows[k]) if k < hi and self.d1[k] == q1 else -1
        finally:
            self.release()

    def release(self) -> None:
        """Drop the mapped file's pages from memory (read again when used)."""
        self._map.madvise(mmap.MADV_DONTNEED)


def _sorted(rec: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """A partition's records sorted by (d0, d1), equal digests in the order given (the rows'
    order). Sorted by the first half alone, about twice as fast as by both, whenever no two
    first halves are equal, where both sorts give this one order; else (rare: digests listed
    twice) by both halves, stably."""
    by_first = rec[np.argsort(rec[:, 0])]
    if len(rec) > 1 and (by_first[1:, 0] == by_first[:-1, 0]).any():
        return rec[np.lexsort((rec[:, 1], rec[:, 0]))]
    return by_first


def _partition(
    batches: Iterable[pa.RecordBatch], parts: list[Path], release: Callable[[], None] | None
) -> None:
    """Append every (d0, d1, row) to the partition file of its d0's top bits."""
    start = 0
    edges = np.arange((1 << sizes.DIGEST_PARTITION_BITS) + 1)
    for batch in batches:
        a0 = batch.column("d0").to_numpy(zero_copy_only=False)
        a1 = batch.column("d1").to_numpy(zero_copy_only=False)
        # partition numbers as bytes: their stable sort is a radix sort, 10x faster
        part = (a0 >> np.uint64(64 - sizes.DIGEST_PARTITION_BITS)).astype(_PART_TYPE)
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], edges)
        rec = np.empty((len(a0), 3), dtype=np.uint64)
        rec[:, 0], rec[:, 1] = a0[order], a1[order]
        rec[:, 2] = order + start
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            with open(parts[p], "ab") as f:
                rec[bounds[p] : bounds[p + 1]].tofile(f)
        start += len(a0)
        if release is not None:  # the batch's digests, read from the file: not kept resident
            release()

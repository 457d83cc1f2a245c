"""A large snapshot's digests sorted on disk, for :class:`.snapshot_match.DigestIndex`.

Past ``sizes.SNAPSHOT_MEMORY_ROWS`` rows the index does not hold the
digests and their order in memory (24 bytes a row): the digests (both halves) and each one's
snapshot row are sorted into a temporary file, through 64 partition files by the top bits of
the first half (a few MB sorted at a time, whatever the size), and memory-mapped; a lookup
binary-searches the mapped arrays, whose pages are dropped after each batch (:meth:`release`).
Digests listed twice are found while sorting (:attr:`SortedDigests.twice`).
"""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.tuning import sizes


class SortedDigests:
    """The digests of a snapshot's ``batches`` (halves ``d0``, ``d1``), sorted by (d0, d1) on
    disk: :attr:`d0`, :attr:`d1` and :attr:`rows` (the snapshot row of each)."""

    def __init__(
        self, batches: list[pa.RecordBatch], release: Callable[[], None] | None = None
    ) -> None:
        """``release``: drops the pages of ``batches`` read so far (a memory-mapped file's),
        called after each batch."""
        n = sum(b.num_rows for b in batches)
        self.size = n
        file = tempfile.TemporaryFile(prefix="recordsync-digests-")  # noqa: SIM115
        twice: list[npt.NDArray[np.uint64]] = []
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
                rec = rec[np.lexsort((rec[:, 1], rec[:, 0]))]
                same = (rec[1:, 0] == rec[:-1, 0]) & (rec[1:, 1] == rec[:-1, 1])
                if same.any():
                    twice += [rec[1:, 2][same], rec[:-1, 2][same]]
                for k in range(3):
                    file.seek((k * n + at) * 8)
                    file.write(np.ascontiguousarray(rec[:, k]).tobytes())
                at += len(rec)
            file.flush()  # mapped, the file lives on (already unlinked) until unmapped
            self._map = mmap.mmap(file.fileno(), 3 * n * 8, access=mmap.ACCESS_READ)
        every = np.frombuffer(self._map, dtype=np.uint64)
        self.d0, self.d1 = every[:n], every[n : 2 * n]
        self.rows = every[2 * n :].view(np.int64)
        self.twice = np.unique(np.concatenate([np.zeros(0, np.uint64), *twice])).view(np.int64)
        """Snapshot rows whose digest another row has too, sorted."""

    def find(self, q0: npt.NDArray[np.uint64], q1: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """Per query: a snapshot row with that digest, or -1."""
        n = self.size
        pos = np.minimum(np.searchsorted(self.d0, q0), n - 1)
        first = self.d0[pos] == q0
        same = first & (self.d1[pos] == q1)
        found = np.where(same, self.rows[pos], -1)
        for j in np.flatnonzero(first & ~same).tolist():  # further along a run of equal d0
            lo = int(pos[j])
            hi = int(np.searchsorted(self.d0, q0[j], side="right"))
            k = lo + int(np.searchsorted(self.d1[lo:hi], q1[j]))
            if k < hi and self.d1[k] == q1[j]:
                found[j] = self.rows[k]
        return found

    def release(self) -> None:
        """Drop the mapped file's pages from memory (read again when used)."""
        self._map.madvise(mmap.MADV_DONTNEED)


def _partition(
    batches: list[pa.RecordBatch], parts: list[Path], release: Callable[[], None] | None
) -> None:
    """Append every (d0, d1, row) to the partition file of its d0's top bits."""
    start = 0
    edges = np.arange((1 << sizes.DIGEST_PARTITION_BITS) + 1)
    for batch in batches:
        a0 = batch.column("d0").to_numpy(zero_copy_only=False)
        a1 = batch.column("d1").to_numpy(zero_copy_only=False)
        part = (a0 >> np.uint64(64 - sizes.DIGEST_PARTITION_BITS)).astype(np.int64)
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

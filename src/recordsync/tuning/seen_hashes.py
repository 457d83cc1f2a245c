"""A set of 64-bit hashes that may grow past memory and stays cheap to ask (the ledger keys a
step has sent so far, when its duplicate scan did not say which keys two rows may share:
:mod:`recordsync.nightly.ledger_prep`).

Up to ``sizes.SEEN_HASH_ROWS`` hashes are held in a Python set. Past it they go to disk, split
by their top ``sizes.DUPLICATE_PARTITION_BITS`` bits into partitions, each a file holding a
sorted part and, after it, a tail of the hashes appended since. A Bloom filter in memory
(``sizes.SEEN_BLOOM_BITS`` bits, three probes a hash) answers "not there" for nearly every new
hash without reading the disk; a hash it lets through is looked for in its partition: a binary
search of the sorted part through a memory map (a few pages read, unmapped after) and a scan of
the tail. A tail that grows past a quarter of its sorted part is sorted into it (one
partition read and written at a time). Memory: the set, the filter, one partition while it is
sorted, never every hash: no lookup probes a structure that grows with the source at random.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from recordsync.tuning import sizes

_PROBES = 3


class SeenHashes:
    """A set of ints (Python hashes: 64-bit); the ints added are never removed."""

    def __init__(self, block: int | None = None, bloom_bits: int | None = None) -> None:
        self.block = block or sizes.SEEN_HASH_ROWS
        bits = bloom_bits or sizes.SEEN_BLOOM_BITS
        self._width = max(3, (bits - 1).bit_length())  # the filter: 2 ** width bits
        self._part_bits = sizes.DUPLICATE_PARTITION_BITS
        self._mem: set[int] = set()
        self._bloom: npt.NDArray[np.uint8] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._sorted = [0] * (1 << self._part_bits)
        """Hashes in the sorted part of each partition's file (at its start)."""
        self._tail = [0] * (1 << self._part_bits)
        """Hashes appended after the sorted part, not sorted yet."""
        self.spilled = 0
        """Hashes written to disk."""

    def __len__(self) -> int:
        return len(self._mem) + self.spilled

    def add(self, value: int) -> None:
        self._mem.add(value)
        if len(self._mem) >= self.block:
            self._spill()

    def found(self, values: Iterable[int]) -> set[int]:
        """The ones of ``values`` that are in the set."""
        asked = list(values)
        mem = self._mem
        out = {v for v in asked if v in mem}
        if self._bloom is None:
            return out
        rest = np.fromiter((v for v in asked if v not in out), np.int64)
        if len(rest):
            maybe = rest[self._maybe(rest)]
            if len(maybe):
                out.update(self._on_disk(np.unique(maybe)))
        return out

    def _probes(self, values: npt.NDArray[np.int64]) -> list[npt.NDArray[np.uint64]]:
        u = values.view(np.uint64)
        mask = np.uint64((1 << self._width) - 1)
        shifts = (0, 21, 42)
        return [
            ((u >> np.uint64(s)) | (u << np.uint64(64 - s))) & mask if s else u & mask
            for s in shifts[:_PROBES]
        ]

    def _maybe(self, values: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        assert self._bloom is not None
        bloom = self._bloom
        hit = np.ones(len(values), dtype=bool)
        for pos in self._probes(values):
            byte = bloom[pos >> np.uint64(3)]
            hit &= ((byte >> (pos & np.uint64(7)).astype(np.uint8)) & np.uint8(1)) == 1
        return hit

    def _partition(self, values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return (values.view(np.uint64) >> np.uint64(64 - self._part_bits)).astype(np.int64)

    def _path(self, p: int) -> Path:
        assert self._dir is not None
        return Path(self._dir.name) / f"{p}.bin"

    def _spill(self) -> None:
        """The hashes in memory into the filter and onto their partitions' tails."""
        values = np.fromiter(self._mem, np.int64, len(self._mem))
        self._mem = set()
        if self._bloom is None:
            self._bloom = np.zeros(1 << (self._width - 3), dtype=np.uint8)
            self._dir = tempfile.TemporaryDirectory(prefix="recordsync-seen-")
        for pos in self._probes(values):
            bit = np.left_shift(np.uint8(1), (pos & np.uint64(7)).astype(np.uint8))
            np.bitwise_or.at(self._bloom, pos >> np.uint64(3), bit)
        part = self._partition(values)
        order = np.argsort(part, kind="stable")
        values, part = values[order], part[order]
        bounds = np.searchsorted(part, np.arange((1 << self._part_bits) + 1))
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            chunk = values[bounds[p] : bounds[p + 1]]
            with open(self._path(p), "ab") as f:
                chunk.tofile(f)
            self._tail[p] += len(chunk)
            if self._tail[p] * 4 > self._sorted[p]:
                self._sort(p)
        self.spilled += len(values)

    def _sort(self, p: int) -> None:
        """Partition ``p``'s tail sorted into its sorted part."""
        path = self._path(p)
        whole = np.sort(np.fromfile(path, dtype=np.int64))
        whole.tofile(path)
        self._sorted[p], self._tail[p] = len(whole), 0

    def _on_disk(self, values: npt.NDArray[np.int64]) -> list[int]:
        """The ones of ``values`` (sorted, distinct) that were written to disk."""
        out: list[int] = []
        part = self._partition(values)
        for p in np.unique(part).tolist():
            want = values[part == p]
            n, tail = self._sorted[p], self._tail[p]
            if n:
                mm = np.memmap(self._path(p), dtype=np.int64, mode="r", shape=(n,))
                at = np.minimum(np.searchsorted(mm, want), n - 1)
                hit = np.asarray(mm[at]) == want
                del mm  # its pages are not the process's once unmapped
                out.extend(want[hit].tolist())
                want = want[~hit]
            if tail and len(want):
                rest = np.fromfile(self._path(p), dtype=np.int64, count=tail, offset=8 * n)
                out.extend(want[np.isin(want, rest)].tolist())
        return out

    def close(self) -> None:
        self._mem = set()
        self._bloom = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        self.spilled = 0

    __del__ = close

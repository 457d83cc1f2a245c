"""The snapshot rows a step with change detection in the database did not read
(:mod:`.pushdown`): one bit a snapshot row (10M rows: 1.25 MB), never the rows' numbers all
at once; they are handed out a block at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SPAN = 1 << 20
"""Snapshot rows made into numbers (or into a mask) at a time (a multiple of 8)."""


class UnchangedRows:
    """A set of snapshot rows, as a bitmap over the snapshot's ``size`` rows."""

    def __init__(self, size: int, bits: np.ndarray[Any, Any] | None = None) -> None:
        self.size = size
        self.bits = np.zeros((size + 7) // 8, np.uint8) if bits is None else bits
        self._count: int | None = None

    @classmethod
    def every(cls, size: int) -> UnchangedRows:
        bits = np.full((size + 7) // 8, 0xFF, np.uint8)
        if size % 8:
            bits[-1] = np.uint8((0xFF << (8 - size % 8)) & 0xFF)
        return cls(size, bits)

    @classmethod
    def of(cls, size: int, rows: np.ndarray[Any, Any]) -> UnchangedRows:
        """The rows ``rows`` (numbers below ``size``)."""
        mask = np.zeros(size, dtype=bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        return cls(size, np.packbits(mask))

    @classmethod
    def where_not(cls, found: pa.ChunkedArray | pa.Array) -> UnchangedRows:
        """The rows where ``found`` (a boolean per snapshot row, null: false) is not true."""
        size = len(found)
        out = cls(size)
        for start in range(0, size, SPAN):
            part = pc.invert(pc.fill_null(found.slice(start, SPAN), False))
            mask = np.asarray(part.to_numpy(zero_copy_only=False), dtype=bool)
            out.bits[start // 8 : (start + len(mask) + 7) // 8] = np.packbits(mask)
        return out

    def __len__(self) -> int:
        if self._count is None:
            self._count = int(np.unpackbits(self.bits, count=self.size).sum(dtype=np.int64))
        return self._count

    def _mask(self, start: int) -> np.ndarray[Any, Any]:
        count = min(SPAN, self.size - start)
        return np.unpackbits(self.bits[start // 8 : (start + count + 7) // 8], count=count)

    def mask(self, start: int, count: int) -> np.ndarray[Any, Any]:
        """Per snapshot row ``start`` to ``start + count``: whether it is one of the rows."""
        first = start // 8
        bits = np.unpackbits(self.bits[first : (start + count + 7) // 8])
        return bits[start - first * 8 : start - first * 8 + count].astype(bool)

    def spans(self) -> Iterator[np.ndarray[Any, Any]]:
        """The rows' numbers (int64, ascending), one span of the snapshot at a time."""
        for start in range(0, self.size, SPAN):
            yield np.flatnonzero(self._mask(start)).astype(np.int64) + start

    def blocks(self, rows: int) -> Iterator[np.ndarray[Any, Any]]:
        """The rows' numbers in ascending order, ``rows`` at a time (the last block fewer)."""
        pending: list[np.ndarray[Any, Any]] = []
        held = 0
        for got in self.spans():
            pending.append(got)
            held += len(got)
            while held >= rows:
                joined = np.concatenate(pending)
                yield joined[:rows]
                rest = joined[rows:]
                pending, held = [rest], len(rest)
        if held:
            yield np.concatenate(pending)

    def keep(self, test: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]) -> None:
        """Keep only the rows for which ``test`` (a boolean per row of a block of rows'
        numbers) is true."""
        for start in range(0, self.size, SPAN):
            mask = self._mask(start)
            at = np.flatnonzero(mask)
            if not len(at):
                continue
            ok = np.asarray(test(at.astype(np.int64) + start), dtype=bool)
            mask[at[~ok]] = 0
            self.bits[start // 8 : (start + len(mask) + 7) // 8] = np.packbits(mask)
        self._count = None

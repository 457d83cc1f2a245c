"""A uniform sample of the rows the first pass finds unchanged from their digests, with their
cells: those rows are never mapped in the run, so the read-back of rows found unchanged
(:mod:`recordsync.run.verify`) maps these few cells instead of reading the source again.

Bottom-k sampling: every row found gets a random priority, the ``size`` lowest are kept (the
same as a uniform sample without replacement). Per batch: one random number a row found,
and a copy of the cells of the rows that enter the sample (``size`` rows at most in all).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from recordsync.read import SourceBatch


class CellSample:
    """Up to ``size`` rows (their cells, one-row Arrow batches) of the rows found unchanged."""

    def __init__(self, size: int, seed: int | None = None) -> None:
        self.size = size
        self._rng = np.random.default_rng(seed)
        self._kept: dict[tuple[str, int], tuple[float, Any]] = {}
        self._bar = 1.0  # a priority at or above it cannot enter a full sample

    def offer(self, sb: SourceBatch, found: npt.NDArray[np.bool_]) -> None:
        """The rows of ``sb`` where ``found`` is true are candidates."""
        if not self.size:
            return
        at = np.flatnonzero(found)
        if not len(at):
            return
        priority = self._rng.random(len(at))
        keep = priority < self._bar
        if not keep.any():
            return
        at, priority = at[keep], priority[keep]
        if len(at) > self.size:
            best = np.argpartition(priority, self.size - 1)[: self.size]
            at, priority = at[best], priority[best]
        rows = sb.batch.take(at)  # a copy: the batch itself is let go
        for j, (i, p) in enumerate(zip(at.tolist(), priority.tolist(), strict=True)):
            self._kept[(sb.file, int(sb.rows[i]))] = (p, rows.slice(j, 1))
        if len(self._kept) > self.size:
            order = sorted(self._kept.items(), key=lambda kv: kv[1][0])
            self._kept = dict(order[: self.size])
        if len(self._kept) == self.size:
            self._bar = max(p for p, _ in self._kept.values())

    def cells_in(self, file: str, lines: Any) -> dict[int, Any] | None:
        """The sampled rows of ``file`` among ``lines`` (ascending): line → its cells."""
        if not self._kept or not len(lines):
            return None
        first, last = int(lines[0]), int(lines[-1])
        near = [line for f, line in self._kept if f == file and first <= line <= last]
        if not near:
            return None
        wanted = np.asarray(lines)
        at = np.searchsorted(wanted, near)
        return {
            line: self._kept[(file, line)][1]
            for line, i in zip(near, at.tolist(), strict=True)
            if i < len(wanted) and int(wanted[i]) == line
        }

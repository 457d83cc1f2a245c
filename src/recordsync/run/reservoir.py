"""A uniform sample of a stream whose items come in runs (a step's chunks): Li's algorithm L,
one random number per item *taken* (not per item seen), so that a chunk none of whose items
is taken costs an addition."""

from __future__ import annotations

import math
import random
from typing import Generic, TypeVar

T = TypeVar("T")


class Reservoir(Generic[T]):
    """A uniform sample of ``size`` items of a stream (algorithm L)."""

    __slots__ = ("_next", "_rng", "_w", "items", "seen", "size")

    def __init__(self, size: int, rng: random.Random) -> None:
        self.size = size
        self.items: list[T] = []
        self.seen = 0
        self._rng = rng
        self._w = 1.0
        self._next = size  # the position of the next item taken once the sample is full
        if size:
            self._step()

    def _step(self) -> None:
        rng = self._rng
        self._w *= math.exp(math.log(rng.random() or 1e-300) / self.size)
        jump = math.log(rng.random() or 1e-300) / math.log1p(-self._w) if self._w < 1 else 0.0
        self._next += int(min(jump, 2.0**62))

    def wants(self, n: int) -> list[int]:
        """Of the next ``n`` items, the indexes (0..n-1) to take; then they count as seen.
        Each index returned must be given to :meth:`take` in order."""
        if not self.size:
            self.seen += n
            return []
        start, end = self.seen, self.seen + n
        out = list(range(0, max(0, min(end, self.size) - start)))  # while the sample fills
        while self._next < end:  # never behind ``start``: every position is passed in order
            out.append(self._next - start)
            self._next += 1
            self._step()
        self.seen = end
        return out

    def take(self, item: T) -> T | None:
        """Add ``item``; the item it replaces (None while the sample fills)."""
        if len(self.items) < self.size:
            self.items.append(item)
            return None
        slot = self._rng.randrange(self.size)
        old, self.items[slot] = self.items[slot], item
        return old

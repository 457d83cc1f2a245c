"""Keep the cyclic garbage collector off the rows of a batch while they are built and used.

A batch of prepared rows is ~5 GC-tracked containers per row (PreparedRow, SourceRow, the
payload, its fields dict, list values), all acyclic: reference counting frees them. With the
GC running, every few hundred allocations trigger a collection that walks all of them, and
each survivor is walked again when it is promoted to an older generation; that was a third of
the time spent building rows. So, per batch:

* the GC is paused while the rows are built (restored to its previous state, even on error);
* the rows are then frozen (``gc.freeze``: moved to the permanent generation, which no
  collection walks) while the consumer works through them, and unfrozen (``gc.unfreeze``:
  back to the oldest generation) when the next batch is built or the stream ends.

Freezing also parks whatever else was tracked at that moment, and unfreezing puts it all in
the oldest generation, bypassing the count by which CPython decides when to collect that
generation: a cycle alive at a freeze that became garbage since (an answered request, an
exception kept with its traceback) waits for a full collection that, left to CPython, never
comes during a run (measured: one full collection in a 1M-row run, and 75,000 such objects
collected at its end). So :meth:`BatchGC.release` runs one itself when the objects a freeze
parked (counted every :data:`CHECK_EVERY` releases) have grown by :data:`GROWTH` since the
last one (CPython's own rule for its oldest
generation): memory stays flat, and a run whose garbage is freed by reference counting (the
usual case) never pays for it. Freezing is only used when nothing else has frozen objects
(``gc.get_freeze_count() == 0``), so a process that froze its start-up objects keeps them
frozen; and never while the GC was disabled by someone else.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from recordsync import tuning


def gc_paused(on_resume: Callable[[], None] | None = None) -> AbstractContextManager[None]:
    """Pause the cyclic GC for the block; restore its previous state, even on error (with
    the ``gc_pause`` switch off, :mod:`recordsync.tuning`: nothing). ``on_resume()`` runs
    just before the GC runs again (only when it was running before the block)."""
    return _paused(on_resume)


@contextmanager
def _paused(on_resume: Callable[[], None] | None) -> Iterator[None]:
    """The GC paused for the block; ``on_resume()`` just before it runs again (only when it
    was running before the block, and only with the ``gc_pause`` switch on)."""
    if not tuning.current().gc_pause:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if on_resume is not None:
                on_resume()
            gc.enable()


GROWTH = 1.25
"""A full collection runs when a freeze parks more than this many times the objects left
after the last one (or than the first freeze parked)."""

CHECK_EVERY = 32
"""Releases between two counts of the parked objects (the first count at the 32nd release):
``gc.get_freeze_count()`` walks every parked object, about 5 ms in a run's process (its
imports alone park some 60,000) and 11 ms in one holding a million objects
(bench/bench_cpu.py's), so counting at every release (a slice of 2,048 rows) cost that
benchmark 0.6 s of CPU a 100k-row run; every 32nd is every 65,536 rows. Counting at the
first release as well cost a small run (a 1,000-row run releases once) 5 ms of its
start-up, for a baseline it never used."""


class BatchGC:
    """GC handling for one stream of batches (see the module docstring)."""

    def __init__(self, check_every: int = CHECK_EVERY) -> None:
        self._frozen = False
        self.check_every = check_every
        self._releases = 0
        self._limit = 0
        """Parked objects past which :meth:`release` collects (0: not known yet)."""
        self.collections = 0

    @contextmanager
    def building(self) -> Iterator[None]:
        """Around the building of one batch's rows (with the ``gc_pause`` switch off,
        :mod:`recordsync.tuning`: nothing)."""
        self.release()
        with _paused(self._freeze):
            yield

    def _freeze(self) -> None:
        """Park the batch's rows (and whatever else is tracked) unless someone else froze."""
        if gc.get_freeze_count() == 0:
            gc.freeze()
            self._frozen = True

    def release(self) -> None:
        """Unfreeze what :meth:`building` froze (idempotent); call when the stream ends."""
        if self._frozen:
            self._frozen = False
            self._releases += 1
            if self._releases % self.check_every:
                gc.unfreeze()
                return
            parked = gc.get_freeze_count()
            gc.unfreeze()
            if not self._limit:
                self._limit = int(parked * GROWTH)
            elif parked > self._limit:
                self._limit = int((parked - gc.collect()) * GROWTH)
                self.collections += 1

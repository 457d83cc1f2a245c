"""Every process-wide or memory tweak, each behind one switch.

- ``gc_pause``: the cyclic GC paused while a batch of rows is built, the rows frozen while
  they are used (:mod:`.gcpause`);
- ``switch_interval``: a shorter interpreter switch interval while a step sends
  (:mod:`.switching`);
- ``native_memory``: Arrow on jemalloc (else the system allocator), glibc's arenas capped,
  the pages glibc freed given back after each source batch (:mod:`.native_memory`).

Each module says what it saves and how that was measured.

They change the whole process (its garbage collector, its interpreter, its C allocator), so
they are off unless asked for: the command line turns them all on (:func:`enable`, one
process per run); a library user (Dagster, Airflow, a notebook) gets none of them unless it
calls :func:`enable` or gives a run ``RunRequest(tuning=Tuning.all())``. Off, a run does the
same work with the same results, in more time and memory.

Beside them, :mod:`.spill` keeps per-row facts off the heap past a block: it is per run, not
process-wide, and bounds a run's memory whoever calls it, so it has no switch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tuning:
    """Which process-wide tweaks are on (see the module's table)."""

    gc_pause: bool = False
    switch_interval: bool = False
    native_memory: bool = False

    @classmethod
    def all(cls) -> Tuning:
        """Every tweak on: the command line's setting."""
        return cls(gc_pause=True, switch_interval=True, native_memory=True)


_lock = threading.Lock()
_current = Tuning()


def current() -> Tuning:
    """The tweaks on in this process now (all off until :func:`enable` or :func:`using`)."""
    return _current


def enable(tuning: Tuning | None = None) -> None:
    """Turn the tweaks of ``tuning`` (default: all of them) on for the rest of the process."""
    global _current
    with _lock:
        _current = Tuning.all() if tuning is None else tuning


@contextmanager
def using(tuning: Tuning | None) -> Iterator[None]:
    """The tweaks of ``tuning`` for the block, then the process's setting again; None: the
    process's setting unchanged. (Arrow's allocator, once chosen, stays for the process.)"""
    global _current
    if tuning is None:
        yield
        return
    with _lock:
        saved, _current = _current, tuning
    try:
        yield
    finally:
        with _lock:
            _current = saved

"""Native memory a run's process keeps: how much of what it frees goes back to the system.

A run's peak RSS is not only Python objects. The CSV reader's Arrow buffers come from
Arrow's default allocator (mimalloc in the wheels), which keeps what it freed for reuse; and
glibc gives each thread that allocates (the read-ahead thread, the send threads)
an arena of its own, which keeps its freed pages too. So, once per process, :func:`configure`
(called by the first read of a source, :mod:`recordsync.read`, before Arrow parses anything):

- makes Arrow allocate with jemalloc where the pyarrow build has it (the Linux wheels do),
  its freed pages given back after :data:`DECAY_MS`, else with the system allocator
  (``malloc``); unless the user chose a pool with ``ARROW_DEFAULT_MEMORY_POOL`` (then that
  pool is left alone);
- caps glibc's arenas at :data:`ARENAS` (``mallopt(M_ARENA_MAX)``), unless the user set
  ``MALLOC_ARENA_MAX`` (glibc read it at start-up);

and :func:`give_back`, called after each source batch is read, hands the pages glibc's heap
freed since back to the system (``malloc_trim``). Where the C library is not glibc (musl,
macOS), the glibc calls are skipped: nothing else changes.

Why jemalloc rather than ``malloc``: on ``malloc`` Arrow's buffers lived in glibc's heap,
and the trim after each batch gave them back only for the next batch to fault them in
again: reading and deciding an unchanged 1M-row CSV took 2.5 times the page faults and
two fifths more CPU. jemalloc reuses its own pages and returns what stays unused, so the
trim is left with Python's and NumPy's share (docs/run.md, "Native memory", has the figures).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from recordsync import tuning

ARENAS = 2
"""glibc arenas at most (its default: eight per core)."""

DECAY_MS = 100
"""How long jemalloc keeps a freed page for reuse before giving it back (Arrow's own
default: 1 s)."""

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter number for the arena cap (malloc.h)."""

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
ARENA_ENV = "MALLOC_ARENA_MAX"

_lock = threading.Lock()
_configured = False


def _glibc() -> Any | None:
    """The process's C library, if it has glibc's ``mallopt`` and ``malloc_trim``."""
    try:
        lib = ctypes.CDLL(None)
        lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return lib


_libc: Any | None = _glibc()


def configure() -> None:
    """Arrow's pool and glibc's arena cap, once per process (later calls do nothing); with
    the ``native_memory`` switch off (:mod:`recordsync.tuning`): nothing, not even once."""
    global _configured
    if not tuning.current().native_memory:
        return
    with _lock:
        if _configured:
            return
        _configured = True
    if _libc is not None and not os.environ.get(ARENA_ENV):
        _libc.mallopt(M_ARENA_MAX, ARENAS)
    if not os.environ.get(POOL_ENV):
        import pyarrow as pa

        pa.set_memory_pool(_arrow_pool())


def _arrow_pool() -> Any:
    """jemalloc's pool with :data:`DECAY_MS`, or the system's where pyarrow has no jemalloc."""
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a build without it (some platforms, some conda builds)
        return pa.system_memory_pool()
    pa.jemalloc_set_decay_ms(DECAY_MS)
    return pool


def give_back() -> None:
    """Return the pages freed so far to the system (glibc only; with the ``native_memory``
    switch off, :mod:`recordsync.tuning`: nothing)."""
    if _libc is not None and tuning.current().native_memory:
        _libc.malloc_trim(0)

"""A shorter interpreter switch interval while a step sends (:func:`prompt_switching`).

The runner's main thread prepares rows (mapping a slice of 2,048 rows is tens of
milliseconds of interpreter work) while the sender thread waits for an answer. When the
answer arrives during such work, the sender thread needs the interpreter lock to read it and
to send the next chunk, and by default it asks for it only after 5 ms
(``sys.getswitchinterval()``), once for each of the few blocking calls that reading an answer
takes. Measured on a 100k-row run into the sandbox over loopback: a request that overlapped a
slice's mapping took 3.4–3.5 ms longer than the others with the default interval, 1.5–1.9 ms
with 1 ms. The main thread loses nothing it needs: its work is not waited for while a chunk
is in flight.

The interval is process-wide: it is set while at least one step of this process sends (runs
in several threads of one process share one setting) and restored when the last one ends.
A shorter interval already set by the host program is kept.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from recordsync import tuning

SEND_SWITCH_INTERVAL = 0.001
"""Seconds (``sys.setswitchinterval``) while a step sends."""

_lock = threading.Lock()
_users = 0
_saved: float | None = None


@contextmanager
def prompt_switching(interval: float = SEND_SWITCH_INTERVAL) -> Iterator[None]:
    """Run the block with a switch interval of at most ``interval``; restore the previous
    one when the last block of this process that uses it ends (even on error). With the
    ``switch_interval`` switch off (:mod:`recordsync.tuning`): nothing."""
    global _users, _saved
    if not tuning.current().switch_interval:
        yield
        return
    with _lock:
        if _users == 0:
            _saved = sys.getswitchinterval()
            if interval < _saved:
                sys.setswitchinterval(interval)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _saved is not None:
                sys.setswitchinterval(_saved)
                _saved = None

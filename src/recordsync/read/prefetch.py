"""Read the next batch of a source in a background thread while the current one is mapped.

pyarrow parses CSV and decodes Parquet with the GIL released, so on a machine with a second
core the reading of batch ``k+1`` overlaps the (Python) mapping of batch ``k``: the wall time
of a read becomes nearly free; the CPU time is the same. One batch is read ahead (memory: two
batches more at most). Items, the order and exceptions are exactly those of the wrapped
iterator: an exception it raises comes out where it was raised, after the items before it.
The thread starts with the first ``next()``, and stops (closing the wrapped iterator in its
own thread) when the consumer finishes, closes the generator or drops it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_POLL = 0.1  # seconds between checks that the consumer still wants items


class _End:
    """The wrapped iterator is exhausted."""


class _Failed:
    """The wrapped iterator raised ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def read_ahead(items: Iterator[T], name: str = "recordsync-read") -> Iterator[T]:
    """Yield the items of ``items``, produced one ahead in a background thread."""
    box: queue.Queue[T | _End | _Failed] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: T | _End | _Failed) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    break
            else:
                put(_End())
        except BaseException as exc:  # handed to the consumer, raised there
            put(_Failed(exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            got = box.get()
            if isinstance(got, _End):
                return
            if isinstance(got, _Failed):
                raise got.exc
            yield got
    finally:
        stop.set()
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):  # unblock a put; the thread sees ``stop``
                box.get(timeout=_POLL)
        thread.join()

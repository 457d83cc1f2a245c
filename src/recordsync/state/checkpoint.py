"""Copy the write-ahead log into the database on a thread of its own while a run writes.

A 100k-row first run writes about 40 MB of log (the journal, its outcomes, the ledger). SQLite
copies the log into the database (a checkpoint) when it passes ``wal_autocheckpoint`` pages,
inside the commit that passed it: on the run's main thread, about 0.15 s of it at 40 MB. And
:meth:`recordsync.state.journal.Journal.finish_run` checkpoints what is left after the last
answer, about 0.2 s of a 100k run's end (measured over loopback into the sandbox).

:class:`BackgroundCheckpoints` runs a passive checkpoint from a second connection, on a
daemon thread, every ``sizes.CHECKPOINT_EVERY_S`` seconds: SQLite does the copying with the
interpreter lock released, a passive checkpoint never blocks the writer (it copies what was
committed before it began; with nothing new it does nothing), and after a complete one the writer
starts the log over, so the log stays small and the final checkpoint short. A checkpoint that
fails (the database busy, the disk full) is logged at debug level and tried again next time:
the run's own commits and its final checkpoint are unaffected.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from recordsync.tuning import sizes

log = logging.getLogger(__name__)


def checkpoint_once(conn: sqlite3.Connection) -> bool:
    """One passive checkpoint through ``conn``; True if the log had frames to copy."""
    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(row and row[1] > 0)


class BackgroundCheckpoints:
    """A daemon thread checkpointing ``path``'s write-ahead log; stop it with :meth:`close`
    (idempotent; also a context manager)."""

    def __init__(self, path: Path, *, every_s: float = sizes.CHECKPOINT_EVERY_S) -> None:
        self.path = Path(path)
        self.every_s = every_s
        self.checkpoints = 0
        """Passive checkpoints run on a log that had frames (for tests and logs)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recordsync-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stop.wait(self.every_s):
                try:
                    if conn is None:
                        conn = sqlite3.connect(self.path, isolation_level=None, timeout=0)
                    self.checkpoints += checkpoint_once(conn)
                except sqlite3.Error as exc:
                    log.debug("background checkpoint of %s failed: %s", self.path, exc)
        finally:
            if conn is not None:
                conn.close()

    def close(self) -> None:
        """Stop the thread, after the checkpoint it may be running."""
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> BackgroundCheckpoints:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

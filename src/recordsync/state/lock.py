"""One run per pipeline at a time: an exclusive ``flock`` on ``<state_dir>/locks/<pipeline>.lock``.

The lock is the kernel's ``flock``, not the file's existence: the OS releases it when the
holding process dies, however it dies (``kill -9`` included), so a lock file left behind by a
dead run is simply taken over by the next one (:attr:`PipelineLock.taken_over` then tells
who held it). While held, the file says who holds it (pid, hostname, start time), and a
second run refuses with :class:`RunAborted` quoting that.

**A lock file deleted while a run holds it** (by hand, a cleanup job) must not let a second
run in: that run would create a new file, lock it, and resume the live run's journal. So the
holder also takes a second lock that no file deletion can drop: a one-byte open-file-
description lock (Linux ``F_OFD_SETLK``) in the **state database file itself**, at an offset
far beyond SQLite's own lock bytes (``2**40`` + a CRC-32 of the pipeline name). Whoever can
open the journal must pass it; a second run that took the new lock file but not this one
refuses, saying the lock file was deleted or replaced while the pipeline ran. The lock file
is also re-checked after ``flock`` (the path must still name the locked file), so a file
deleted between the open and the lock is not trusted. The descriptor on the database is
never closed (closing any descriptor of a file drops the process's POSIX locks on it, SQLite's
included); one is kept per database file for the life of the process.

Limits: ``flock`` is local to one machine (do not share a state directory over NFS between
hosts); a child process that inherits the descriptor through a bare ``fork`` keeps the lock
(the descriptor is opened close-on-exec, so ``exec``'d programs do not). Without
``F_OFD_SETLK`` (not Linux) only the lock file guards the pipeline. Two pipeline names whose
CRC-32s are equal share the database lock (one in four billion): one waits for the other.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from recordsync.core.errors import RunAborted
from recordsync.state.ledger_rows import utc_now

log = logging.getLogger(__name__)


class LockHolder(NamedTuple):
    pid: int | None
    hostname: str | None
    started_at: str | None
    pipeline: str | None

    def describe(self) -> str:
        return (
            f"pid {self.pid if self.pid is not None else '?'} on host {self.hostname or '?'},"
            f" started {self.started_at or 'at an unknown time'}"
        )


def lock_path(state_dir: str | Path, pipeline: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", pipeline) or "_"
    return Path(state_dir) / "locks" / f"{safe}.lock"


def read_holder(path: Path) -> LockHolder | None:
    """What a lock file says about its (current or last) holder; None when empty/unreadable."""
    try:
        text = path.read_text(encoding="utf-8").strip()
        data = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    return LockHolder(
        pid if isinstance(pid, int) else None,
        data.get("hostname"),
        data.get("started_at"),
        data.get("pipeline"),
    )


def poll(take: Callable[[], bool], wait: float, on_wait: Callable[[], None]) -> bool:
    """``take()`` until it returns True, for up to ``wait`` seconds (0: once); ``on_wait()``
    once before the first pause. Pauses grow from 50 ms to 1 s. False: never taken."""
    if take():
        return True
    if wait <= 0:
        return False
    on_wait()
    deadline = time.monotonic() + wait
    pause = 0.05
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(pause, left))
        if take():
            return True
        pause = min(pause * 2, 1.0)
    return False


_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_DB_FDS: dict[tuple[int, int], int] = {}
"""(device, inode) of a state database → the descriptor kept open on it (never closed)."""
_db_fds_lock = threading.Lock()


def _db_fd(db: Path) -> int | None:
    """A descriptor on the state database file, kept for the process's life; None when the
    file does not exist (no journal to guard) or the platform has no OFD locks."""
    if _OFD_SETLK is None:
        return None
    try:
        st = os.stat(db)
    except OSError:
        return None
    with _db_fds_lock:
        fd = _DB_FDS.get((st.st_dev, st.st_ino))
        if fd is None:
            fd = os.open(db, os.O_RDWR | os.O_CLOEXEC)
            _DB_FDS[(st.st_dev, st.st_ino)] = fd
        return fd


def _db_lock(fd: int, pipeline: str, kind: int) -> bool:
    """Take (F_WRLCK) or drop (F_UNLCK) the pipeline's byte; False when another holds it."""
    assert _OFD_SETLK is not None
    start = (1 << 40) + zlib.crc32(pipeline.encode("utf-8"))
    try:
        fcntl.fcntl(fd, _OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, 1, 0))
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def same_file(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open as ``fd``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


class PipelineLock:
    """Usage: ``with PipelineLock(state_dir, "nightly") as lock: ...``.

    ``db``: the state database whose journal the lock guards (default ``state.db`` in
    ``state_dir``, when it exists)."""

    def __init__(self, state_dir: str | Path, pipeline: str, db: str | Path | None = None) -> None:
        self.pipeline = pipeline
        self.path = lock_path(state_dir, pipeline)
        self.db = Path(db) if db is not None else Path(state_dir) / "state.db"
        self.taken_over: LockHolder | None = None
        """The previous holder, when its process died without releasing (a stale lock)."""
        self.wait = 0.0
        """Seconds to wait for a live holder before refusing (``--wait-for-lock``)."""
        self._fd: int | None = None
        self._db_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, waiting up to :attr:`wait` seconds for a live holder, or raise
        :class:`RunAborted` naming it."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        taken: list[int] = []

        def take() -> bool:
            fd = self._locked_file()
            if fd is not None:
                taken.append(fd)
            return fd is not None

        if not poll(take, self.wait, self._waiting):
            raise self._busy()
        fd = taken[0]
        db_fd = _db_fd(self.db)
        if db_fd is not None and not _db_lock(db_fd, self.pipeline, fcntl.F_WRLCK):
            os.close(fd)
            raise RunAborted(
                f"pipeline '{self.pipeline}' is already running: another process holds its"
                f" lock in the state database {self.db}, though the lock file {self.path} was"
                " deleted or replaced while it ran",
                hint="wait for that run to finish (find it with `fuser "
                f"{self.db}`); never delete lock files by hand",
            )
        self._db_fd = db_fd
        self.taken_over = read_holder(self.path)
        info = {
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "started_at": utc_now(),
            "pipeline": self.pipeline,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd

    def _locked_file(self) -> int | None:
        """The lock file, opened and flock'ed (still named by its path); None: held."""
        for _ in range(10):  # the file may be deleted or replaced between open and flock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                return None
            if same_file(fd, self.path):
                return fd
            os.close(fd)
        raise RunAborted(
            f"the lock file {self.path} keeps being deleted or replaced",
            hint="stop whatever removes files under the state directory, then run again",
        )

    def _waiting(self) -> None:
        holder = read_holder(self.path)
        log.warning(
            "waiting up to %g s for pipeline '%s' to finish (%s); lock file %s",
            self.wait,
            self.pipeline,
            holder.describe() if holder else "another process",
            self.path,
        )

    def _busy(self) -> RunAborted:
        """The refusal: the live holder named."""
        holder = read_holder(self.path)
        who = holder.describe() if holder else "another process"
        waited = f", still after waiting {self.wait:g} s" if self.wait > 0 else ""
        return RunAborted(
            f"pipeline '{self.pipeline}' is already running ({who}{waited}); lock file {self.path}",
            hint=(
                "wait for that run to finish (--wait-for-lock SECONDS waits for it), or stop it"
                f" (kill {holder.pid if holder and holder.pid else '<pid>'}); a lock left by"
                " a process that died is taken over automatically, so never delete the"
                " lock file by hand"
            ),
        )

    def release(self) -> None:
        """Empty the file (a clean exit leaves no holder behind) and drop the lock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        db_fd, self._db_fd = self._db_fd, None
        if db_fd is not None:
            _db_lock(db_fd, self.pipeline, fcntl.F_UNLCK)
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> PipelineLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

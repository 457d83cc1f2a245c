"""One run per pipeline at a time: an exclusive ``flock`` on ``<state_dir>/locks/<pipeline>.lock``.

The lock is the kernel's ``flock``, not the file's existence: the OS releases it when the
holding process dies, however it dies (``kill -9`` included), so a lock file left behind by a
dead run is simply taken over by the next one (:attr:`PipelineLock.taken_over` then tells
who held it). While held, the file says who holds it (pid, hostname, start time), and a
second run refuses with :class:`RunAborted` quoting that.

Limits: ``flock`` is local to one machine (do not share a state directory over NFS between
hosts); a child process that inherits the descriptor through a bare ``fork`` keeps the lock
(the descriptor is opened close-on-exec, so ``exec``'d programs do not).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
from pathlib import Path
from typing import NamedTuple

from recordsync.errors import RunAborted
from recordsync.state.store import utc_now


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


class PipelineLock:
    """Usage: ``with PipelineLock(state_dir, "nightly") as lock: ...``."""

    def __init__(self, state_dir: str | Path, pipeline: str) -> None:
        self.pipeline = pipeline
        self.path = lock_path(state_dir, pipeline)
        self.taken_over: LockHolder | None = None
        """The previous holder, when its process died without releasing (a stale lock)."""
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunAborted` naming the live holder."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = read_holder(self.path)
            who = holder.describe() if holder else "another process"
            raise RunAborted(
                f"pipeline '{self.pipeline}' is already running ({who}); lock file {self.path}",
                hint=(
                    "wait for that run to finish, or stop it "
                    f"(kill {holder.pid if holder and holder.pid else '<pid>'}); a lock left by"
                    " a process that died is taken over automatically, so never delete the"
                    " lock file by hand"
                ),
            ) from None
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

    def release(self) -> None:
        """Empty the file (a clean exit leaves no holder behind) and drop the lock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
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

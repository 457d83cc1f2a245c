"""One run per pipeline at a time when the state is on PostgreSQL: a session advisory lock
(``pg_try_advisory_lock``) held on a connection of its own for the whole run, instead of the
``flock``'d file of :mod:`recordsync.state.lock`.

The server releases a session lock when the session ends, however the holder dies (``kill
-9`` included: the kernel closes its socket, the server ends the session), so a lock left by
a dead run is taken over by the next run on any worker. The lock session asks the server
to probe an idle client (TCP keepalives, a minute) so that a worker that vanished from the
network frees the lock within a few minutes rather than hours. Who holds the lock (pid,
host, start time) is written to ``lock_holders`` beside it and emptied by a clean release; a
second run refuses with :class:`~recordsync.errors.RunAborted` quoting it, as with the lock
file. If the lock session is lost while the run goes on (the server restarted), the run's
next write fails too: the run stops and the next run resumes it.

The lock id is 64 bits of BLAKE2b over ``recordsync:`` and the pipeline name; two pipeline
names sharing it would wait for each other (one chance in 2**64).
"""

from __future__ import annotations

import contextlib
import os
import socket
from hashlib import blake2b
from typing import Any

from recordsync.errors import RunAborted
from recordsync.state.location import PgUrl
from recordsync.state.lock import LockHolder
from recordsync.state.store import utc_now

_SESSION = (
    "SET tcp_keepalives_idle = 60",
    "SET tcp_keepalives_interval = 10",
    "SET tcp_keepalives_count = 6",
    "SET idle_session_timeout = 0",
    "SET idle_in_transaction_session_timeout = 0",
)


def lock_key(pipeline: str) -> int:
    """The advisory lock id of ``pipeline`` (a signed 64-bit integer)."""
    digest = blake2b(f"recordsync:{pipeline}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PgPipelineLock:
    """Usage: ``with PgPipelineLock(url, "nightly") as lock: ...`` (the interface of
    :class:`recordsync.state.lock.PipelineLock`)."""

    def __init__(self, url: PgUrl, pipeline: str) -> None:
        self.url = url
        self.pipeline = pipeline
        self.taken_over: LockHolder | None = None
        """The previous holder, when its process died without releasing (a stale lock)."""
        self._conn: Any = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunAborted` naming the live holder."""
        if self._conn is not None:
            return
        from recordsync.state.pg import PgConnection, StateDbError

        conn = PgConnection(self.url)
        try:
            for setting in _SESSION:
                with contextlib.suppress(StateDbError):  # an older server lacks one
                    conn.execute(setting)
            got = conn.execute("SELECT pg_try_advisory_lock(?)", (lock_key(self.pipeline),))
            if not got.fetchone()[0]:
                holder = self._holder(conn)
                who = holder.describe() if holder else "another process"
                raise RunAborted(
                    f"pipeline '{self.pipeline}' is already running ({who}); its lock is held"
                    f" in the PostgreSQL state database {self.url}",
                    hint=(
                        "wait for that run to finish, or stop it (kill"
                        f" {holder.pid if holder and holder.pid else '<pid>'} on host"
                        f" {holder.hostname if holder and holder.hostname else '?'}); the"
                        " server frees the lock of a run that died when its connection ends"
                    ),
                )
            self.taken_over = self._holder(conn)
            conn.execute(
                "INSERT INTO lock_holders (pipeline, pid, hostname, started_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (pipeline) DO UPDATE SET pid = excluded.pid,"
                " hostname = excluded.hostname, started_at = excluded.started_at",
                (self.pipeline, os.getpid(), socket.gethostname(), utc_now()),
            )
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _holder(self, conn: Any) -> LockHolder | None:
        row = conn.execute(
            "SELECT pid, hostname, started_at FROM lock_holders WHERE pipeline = ?"
            " AND pid IS NOT NULL",
            (self.pipeline,),
        ).fetchone()
        if row is None:
            return None
        return LockHolder(row[0], row[1], row[2], self.pipeline)

    def release(self) -> None:
        """Empty the holder row (a clean exit leaves no holder behind) and drop the lock."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute(
                "UPDATE lock_holders SET pid = NULL, hostname = NULL, started_at = NULL"
                " WHERE pipeline = ?",
                (self.pipeline,),
            )
            conn.execute("SELECT pg_advisory_unlock(?)", (lock_key(self.pipeline),))
        finally:
            conn.close()  # ends the session: the lock goes with it in any case

    def __enter__(self) -> PgPipelineLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

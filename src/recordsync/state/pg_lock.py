"""One run per pipeline at a time when the state is on PostgreSQL: a session advisory lock
(``pg_try_advisory_lock``) held for the whole run **on the state store's own connection**,
instead of the ``flock``'d file of :mod:`recordsync.state.lock`.

The lock and the run's writes share one session, so no write can happen without the lock:
if the session is lost (the server restarted, the connection was cut or terminated), the
lock goes with it and the run's next write fails: the run stops, and the next run resumes
it. The server releases a session's locks when the session ends, however the holder died
(``kill -9`` included: the kernel closes its socket, the server ends the session), so a lock
left by a dead run is taken over by the next run on any worker. The session asks the server
to probe an idle client (TCP keepalives: 60 s, then 6 probes 10 s apart) so that a worker
that vanished from the network frees the lock within about two minutes.

Who holds the lock (pid, host, start time) is written to ``lock_holders`` and emptied by a
clean release; a second run refuses with :class:`~recordsync.core.errors.RunAborted` quoting it,
as with the lock file. Session locks stack within a session, so the connection also keeps
the pipelines it holds: a second lock object on the same store refuses as another session
would. The lock id is 64 bits of BLAKE2b over ``recordsync:`` and the pipeline name; two
pipeline names sharing it would wait for each other (one chance in 2**64).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from hashlib import blake2b

from recordsync.core.errors import RunAborted
from recordsync.state.ledger_rows import utc_now
from recordsync.state.lock import LockHolder, poll
from recordsync.state.pg import PgConnection, StateDbError

log = logging.getLogger(__name__)
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
    """Usage: ``with store.pipeline_lock("nightly") as lock: ...`` (the interface of
    :class:`recordsync.state.lock.PipelineLock`), on the store's connection ``conn``."""

    def __init__(self, conn: PgConnection, pipeline: str) -> None:
        self.conn = conn
        self.url = conn.url
        self.pipeline = pipeline
        self.taken_over: LockHolder | None = None
        """The previous holder, when its process died without releasing (a stale lock)."""
        self.wait = 0.0
        """Seconds to wait for a live holder before refusing (``--wait-for-lock``)."""
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunAborted` naming the live holder."""
        if self._held:
            return
        conn = self.conn
        for setting in _SESSION:
            with contextlib.suppress(StateDbError):  # an older server lacks one
                conn.execute(setting)

        def take() -> bool:
            if self.pipeline in conn.locks:  # held by this session: refused like another's
                return False
            row = conn.execute("SELECT pg_try_advisory_lock(?)", (lock_key(self.pipeline),))
            return bool(row.fetchone()[0])

        def waiting() -> None:
            holder = self._holder()
            log.warning(
                "waiting up to %g s for pipeline '%s' to finish (%s)",
                self.wait,
                self.pipeline,
                holder.describe() if holder else "another process",
            )

        if not poll(take, self.wait, waiting):
            holder = self._holder()
            who = holder.describe() if holder else "another process"
            waited = f", still after waiting {self.wait:g} s" if self.wait > 0 else ""
            raise RunAborted(
                f"pipeline '{self.pipeline}' is already running ({who}{waited}); its lock is"
                f" held in the PostgreSQL state database {self.url}",
                hint=(
                    "wait for that run to finish (--wait-for-lock SECONDS waits for it), or"
                    " stop it (kill"
                    f" {holder.pid if holder and holder.pid else '<pid>'} on host"
                    f" {holder.hostname if holder and holder.hostname else '?'}); the"
                    " server frees the lock of a run that died when its connection ends"
                ),
            )
        conn.locks.add(self.pipeline)
        self._held = True
        try:
            self.taken_over = self._holder()
            conn.execute(
                "INSERT INTO lock_holders (pipeline, pid, hostname, started_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (pipeline) DO UPDATE SET pid = excluded.pid,"
                " hostname = excluded.hostname, started_at = excluded.started_at",
                (self.pipeline, os.getpid(), socket.gethostname(), utc_now()),
            )
        except BaseException:
            self.release()
            raise

    def _holder(self) -> LockHolder | None:
        row = self.conn.execute(
            "SELECT pid, hostname, started_at FROM lock_holders WHERE pipeline = ?"
            " AND pid IS NOT NULL",
            (self.pipeline,),
        ).fetchone()
        if row is None:
            return None
        return LockHolder(row[0], row[1], row[2], self.pipeline)

    def release(self) -> None:
        """Empty the holder row (a clean exit leaves no holder behind) and drop the lock.
        A lost session has dropped the lock already: nothing to do then."""
        if not self._held:
            return
        self._held = False
        self.conn.locks.discard(self.pipeline)
        with contextlib.suppress(StateDbError):
            if self.conn.in_transaction:  # a failed run's transaction: not committed
                self.conn.execute("ROLLBACK")
            self.conn.execute(
                "UPDATE lock_holders SET pid = NULL, hostname = NULL, started_at = NULL"
                " WHERE pipeline = ?",
                (self.pipeline,),
            )
            self.conn.execute("SELECT pg_advisory_unlock(?)", (lock_key(self.pipeline),))

    def __enter__(self) -> PgPipelineLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

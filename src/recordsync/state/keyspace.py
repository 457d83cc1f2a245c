"""One writer per key space: two runs that write the same object type in the same target
through the same kind of key never overlap (docs/state.md, "Lock").

A **key space** is ``(target, object type, key kind)``. A mapping writes through its ledger key
(``ledger_key <column> (<normalize>)``) when it declares one, and through each of its
``match_by`` rules (``match_by email``, ``match_by name``, ``match_by id``): a row the ledger
does not know is matched by those rules on the service side, so two runs sharing any of them
could both create the same record. A mapping with neither (every row creates) has no key to
race on and takes no lock. The pipeline lock (:mod:`.lock`, :mod:`.pg_lock`) keeps a second
run of the *same* pipeline out; these locks keep out *another* pipeline using the same
mappings, or sharing a custom object's ledger key.

Before anything is sent, a run takes a lock per key space of the steps it runs, in sorted
order (so two runs waiting for each other's locks cannot deadlock), and holds them to its end;
a dry run takes none. Each is taken, in this order:

1. **on this machine, for this user** (any state store, ``--no-state`` too): a ``flock``'d
   file in ``$RECORDSYNC_LOCK_DIR``, else ``~/.cache/recordsync/locks`` (not
   ``$XDG_RUNTIME_DIR``, which a cron job and a login shell do not share). When that
   directory cannot be created the run goes on with the state store's locks, saying so;
2. **in the state store**: on SQLite, a ``flock``'d file in ``locks/keyspaces/`` beside the
   state database (every user and process sharing that state file); on PostgreSQL, a session
   advisory lock on the store's own connection (every machine sharing that database), keyed
   by 64 bits of BLAKE2b of the key space, its holder written to ``keyspace_holders``.

A lock file is named by a hash of the key space (a safe file name whatever the target and
column names hold) and says, while held, which key space it guards and who holds it
(pipeline, pid, host, start time); a refused run quotes that. Not covered: two machines that
share no PostgreSQL state (SQLite files, or ``--no-state``): ``flock`` is local to a machine.

:func:`recordsync.state.targets.normalize_url` turns a target's name into the string the key
space holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from hashlib import blake2b, sha256
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from recordsync.config.models import MappingConfig
from recordsync.core.errors import RunAborted
from recordsync.state.lock import LockHolder, poll, same_file
from recordsync.state.pg import _MIGRATE_LOCK, PgConnection, StateDbError
from recordsync.state.store import utc_now
from recordsync.state.targets import normalize_url

if TYPE_CHECKING:
    from recordsync.state.store import StateStore

log = logging.getLogger(__name__)

LOCK_DIR_ENV = "RECORDSYNC_LOCK_DIR"
"""The machine-wide (per-user by default) directory of key-space lock files."""


def key_kinds(mapping: MappingConfig) -> list[str]:
    """The kinds of key ``mapping`` writes through (sorted; empty: it only creates)."""
    kinds = {f"match_by {rule.by}" for rule in mapping.match_by}
    if mapping.ledger_key is not None:
        kinds.add(f"ledger_key {mapping.ledger_key.column} ({mapping.ledger_key.normalize})")
    return sorted(kinds)


@dataclass(frozen=True, order=True)
class KeySpace:
    """``(target, object type, key kind)``; ``steps``: this run's steps writing through it."""

    target: str
    object_type: str
    key_kind: str
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def text(self) -> str:
        """The key space as one string (hashed for lock names and lock ids)."""
        return json.dumps([self.target, self.object_type, self.key_kind])

    def describe(self) -> str:
        return f"'{self.object_type}' records by {self.key_kind} in {self.target}"

    @property
    def file_name(self) -> str:
        return sha256(self.text.encode()).hexdigest()[:32] + ".lock"

    @property
    def pg_key(self) -> int:
        """The advisory lock id (a signed 64-bit integer; the pipeline lock's ids hash
        ``recordsync:<pipeline>``)."""
        digest = blake2b(f"recordsync-keyspace:{self.text}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)


def key_spaces(target: str, steps: Iterable[tuple[str, MappingConfig]]) -> list[KeySpace]:
    """The key spaces the steps ``(name, mapping)`` write, sorted, each once (with the steps
    that write it); ``target``: the target's name (normalised:
    :func:`recordsync.state.targets.normalize_url`)."""
    where = normalize_url(target)
    found: dict[tuple[str, str], list[str]] = {}
    for step, mapping in steps:
        for kind in key_kinds(mapping):
            found.setdefault((mapping.object_type, kind), []).append(step)
    return sorted(KeySpace(where, t, k, tuple(s)) for (t, k), s in found.items())


def user_lock_dir() -> Path:
    """``$RECORDSYNC_LOCK_DIR``, else ``~/.cache/recordsync/locks``."""
    env = os.environ.get(LOCK_DIR_ENV)
    return Path(env) if env else Path.home() / ".cache" / "recordsync" / "locks"


class _Lock(Protocol):
    where: str

    def take(self) -> bool: ...

    def holder(self) -> dict[str, object] | None: ...

    def release(self) -> None: ...


def _holder_info(space: KeySpace, pipeline: str) -> dict[str, object]:
    return {
        "keyspace": space.describe(),
        "pipeline": pipeline,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "started_at": utc_now(),
    }


class _FileLock:
    """An exclusive ``flock`` on ``<directory>/<hash>.lock``, holding who holds it."""

    def __init__(self, directory: Path, space: KeySpace, pipeline: str) -> None:
        self.path = directory / space.file_name
        self.where = f"lock file {self.path}"
        self._info = _holder_info(space, pipeline)
        self._fd: int | None = None

    def take(self) -> bool:
        for _ in range(10):  # the file may be deleted or replaced between open and flock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise
            if same_file(fd, self.path):
                break
            os.close(fd)
        else:
            raise RunAborted(
                f"the lock file {self.path} keeps being deleted or replaced",
                hint="stop whatever removes files in that directory, then run again",
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(self._info) + "\n").encode(), 0)
        self._fd = fd
        return True

    def holder(self) -> dict[str, object] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)  # a clean exit leaves no holder behind
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


_HOLDERS = """CREATE TABLE IF NOT EXISTS keyspace_holders (
    lock_key BIGINT PRIMARY KEY, keyspace TEXT NOT NULL, pipeline TEXT, pid BIGINT,
    hostname TEXT, started_at TEXT)"""
_HOLDER_COLUMNS = ("keyspace", "pipeline", "pid", "hostname", "started_at")
_held_by: weakref.WeakKeyDictionary[PgConnection, set[int]] = weakref.WeakKeyDictionary()
"""The key-space locks each session holds (session locks stack: a second lock object on
the same connection must be refused as another session would be)."""


def _holders_table(conn: PgConnection) -> None:
    """Create ``keyspace_holders`` once (behind the schema's creation lock)."""
    if conn.execute("SELECT to_regclass('keyspace_holders')").fetchone()[0] is not None:
        return
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATE_LOCK,))
        conn.execute(_HOLDERS)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class _PgLock:
    """A session advisory lock on the state store's connection, its holder in a table."""

    def __init__(self, conn: PgConnection, space: KeySpace, pipeline: str) -> None:
        self.conn = conn
        self.key = space.pg_key
        self.where = f"its lock is held in the PostgreSQL state database {conn.url}"
        self._info = _holder_info(space, pipeline)
        self._held = False
        _holders_table(conn)

    def take(self) -> bool:
        mine = _held_by.setdefault(self.conn, set())
        if self.key in mine:
            return False
        if not self.conn.execute("SELECT pg_try_advisory_lock(?)", (self.key,)).fetchone()[0]:
            return False
        mine.add(self.key)
        self._held = True
        i = self._info
        self.conn.execute(
            "INSERT INTO keyspace_holders (lock_key, keyspace, pipeline, pid, hostname,"
            " started_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (lock_key) DO UPDATE SET"
            " keyspace = excluded.keyspace, pipeline = excluded.pipeline, pid = excluded.pid,"
            " hostname = excluded.hostname, started_at = excluded.started_at",
            (self.key, i["keyspace"], i["pipeline"], i["pid"], i["hostname"], i["started_at"]),
        )
        return True

    def holder(self) -> dict[str, object] | None:
        row = self.conn.execute(
            "SELECT keyspace, pipeline, pid, hostname, started_at FROM keyspace_holders"
            " WHERE lock_key = ? AND pid IS NOT NULL",
            (self.key,),
        ).fetchone()
        if row is None:
            return None
        return dict(zip(_HOLDER_COLUMNS, row, strict=True))

    def release(self) -> None:
        """Forget the holder and drop the lock; a lost session has dropped it already."""
        if not self._held:
            return
        self._held = False
        _held_by.get(self.conn, set()).discard(self.key)
        with contextlib.suppress(StateDbError):
            if self.conn.in_transaction:  # a failed run's transaction: not committed
                self.conn.execute("ROLLBACK")
            self.conn.execute("DELETE FROM keyspace_holders WHERE lock_key = ?", (self.key,))
            self.conn.execute("SELECT pg_advisory_unlock(?)", (self.key,))


def _who(info: dict[str, object] | None) -> tuple[str, str]:
    """(``pipeline 'x' (pid 1 on host h, started t)``, the pid or ``<pid>``)."""
    if info is None:
        return "another run (it has not said who it is yet)", "<pid>"
    pid = info.get("pid")
    holder = LockHolder(
        pid if isinstance(pid, int) else None,
        str(info["hostname"]) if info.get("hostname") else None,
        str(info["started_at"]) if info.get("started_at") else None,
        str(info["pipeline"]) if info.get("pipeline") else None,
    )
    return (
        f"pipeline '{holder.pipeline or '?'}' ({holder.describe()})",
        str(holder.pid) if holder.pid is not None else "<pid>",
    )


def _take(lock: _Lock, space: KeySpace, pipeline: str, wait: float) -> None:
    """Take ``lock``, waiting up to ``wait`` seconds; RunAborted naming its holder."""

    def waiting() -> None:
        who, _ = _who(lock.holder())
        log.warning(
            "waiting up to %g s for %s: %s is writing them (%s)",
            wait,
            space.describe(),
            who,
            lock.where,
        )

    if poll(lock.take, wait, waiting):
        return
    who, pid = _who(lock.holder())
    steps = ", ".join(f"'{s}'" for s in space.steps)
    waited = f" after waiting {wait:g} s" if wait > 0 else ""
    raise RunAborted(
        f"pipeline '{pipeline}' not started{waited}: step {steps} writes {space.describe()},"
        f" and {who} is writing them now; {lock.where}",
        hint=(
            "two runs writing the same records through the same key at once would create"
            " them twice. Nothing was sent: run again when that run has finished, or with"
            f" --wait-for-lock SECONDS to wait for it (or stop it: kill {pid}); a lock left"
            " by a process that died is taken over automatically"
        ),
    )


@contextmanager
def hold_key_spaces(
    spaces: Sequence[KeySpace],
    *,
    pipeline: str,
    store: StateStore | None = None,
    wait: float = 0.0,
) -> Iterator[list[KeySpace]]:
    """Hold a lock on each of ``spaces`` (:func:`key_spaces`) for the ``with`` block: this
    machine's lock files, then the state ``store``'s locks (none: ``--no-state``), each set
    in sorted order. A lock another run holds refuses the run (:class:`RunAborted` naming
    that run), or with ``wait`` (seconds) is waited for, then refuses."""
    ordered = sorted(dict.fromkeys(spaces))  # each once (key_spaces merged their steps)
    with ExitStack() as stack:
        if ordered:
            locks: list[tuple[KeySpace, _Lock]] = []
            user = user_lock_dir()
            try:
                user.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                log.warning(
                    "cannot create the lock directory %s (%s): runs on this machine with"
                    " other state stores are not kept apart; set %s to a writable directory",
                    user,
                    exc.strerror or exc,
                    LOCK_DIR_ENV,
                )
            else:
                locks += [(s, _FileLock(user, s, pipeline)) for s in ordered]
            if store is not None and store.is_postgres:
                conn = store.connection
                assert isinstance(conn, PgConnection)
                locks += [(s, _PgLock(conn, s, pipeline)) for s in ordered]
            elif store is not None:
                beside = store.path.parent / "locks" / "keyspaces"
                beside.mkdir(parents=True, exist_ok=True)
                locks += [(s, _FileLock(beside, s, pipeline)) for s in ordered]
            for space, lock in locks:
                _take(lock, space, pipeline, wait)
                stack.callback(lock.release)
        yield ordered

"""The state store: one SQLite file (``.recordsync/state.db`` by default), or a PostgreSQL
database (``--state-db postgresql://...``: :mod:`recordsync.state.pg`), holding, per
pipeline and mapping, the identity ledger (source key → record id, hash of the last input
sent, last status, last run id) and the chunk journal of :mod:`recordsync.state.journal`.

The store is a library object: the runner opens one per run, the CLI one per command.
Writes happen in explicit transactions (``BEGIN IMMEDIATE``); with ``durable=True`` (the
default) SQLite fsyncs the write-ahead log on every commit, so a committed chunk survives a
``kill -9`` and a power cut.

Only acknowledged results change the ledger (:meth:`StateStore.record_acknowledged`):

    created / updated   record_id (kept when the service gave none), input_hash, status, run
    failed / in_doubt   only last_status and last_run_id: the row is sent again next run
    anything else       ignored (unchanged, invalid and duplicate rows were not sent)
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from recordsync.core.errors import ConfigError
from recordsync.state import pg
from recordsync.state.ledger_rows import ACKED_FAILED as ACKED_FAILED
from recordsync.state.ledger_rows import ACKED_SENT as ACKED_SENT
from recordsync.state.ledger_rows import DELETED as DELETED
from recordsync.state.ledger_rows import (
    ENTRY_SQL,
    LIVE_SQL,
    STATUS_NAMES,
    entry,
    epoch_now,
    write_acknowledged,
)
from recordsync.state.ledger_rows import AckRow as AckRow
from recordsync.state.ledger_rows import Entry as Entry
from recordsync.state.ledger_rows import utc_now as utc_now
from recordsync.state.location import DEFAULT_STATE_PATH as DEFAULT_STATE_PATH
from recordsync.state.location import STATE_PATH_ENV as STATE_PATH_ENV
from recordsync.state.location import PgUrl, StateLocation, state_location
from recordsync.state.lock import PipelineLock
from recordsync.state.pg import PgConnection, StateDbError, StateDbIntegrityError
from recordsync.state.pg_lock import PgPipelineLock
from recordsync.state.schema import SCHEMA_VERSION, migrate
from recordsync.tuning import sizes

DB_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, StateDbError)
"""What a state database raises, whichever it is (SQLite or PostgreSQL)."""
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, StateDbIntegrityError)
Head = tuple[int | None, int, int | None]
"""A ledger row as :meth:`StateStore.heads` reads it: the last run's number, the status code,
the record id."""
AUTO_VACUUM_INCREMENTAL = 2
"""``PRAGMA auto_vacuum``'s value for INCREMENTAL."""
VACUUM_FROM_PAGES = 4096
"""Free pages (16 MiB of 4 KiB pages) from which a file made with ``auto_vacuum`` off is
converted by :meth:`StateStore.release_free_pages`."""


def default_state_path() -> Path:
    """``$RECORDSYNC_STATE_DB`` if set, else ``.recordsync/state.db`` (relative to the cwd)."""
    env = os.environ.get(STATE_PATH_ENV)
    return Path(env) if env else DEFAULT_STATE_PATH


class StateStore:
    """The state database: an SQLite file, created (with its directory) on first use, or a
    PostgreSQL database (``location`` a :class:`PgUrl` or a ``postgresql://`` URL), whose
    tables are created on first use.

    One connection, used from one thread (the run's main loop); other processes are kept
    out by the pipeline lock (:meth:`pipeline_lock`), not by this class."""

    def __init__(self, path: str | Path | PgUrl | None = None, *, durable: bool = True) -> None:
        self.location: StateLocation = state_location(path)
        self._scopes: dict[tuple[str, str], int] = {}
        self._run_numbers: dict[str, int] = {}
        if isinstance(self.location, PgUrl):
            conn = pg.PgConnection(self.location, durable=durable)
            try:
                pg.migrate(conn)
            except BaseException:
                conn.close()
                raise
            # the adapter implements the part of sqlite3.Connection the state modules use
            self._conn = cast(sqlite3.Connection, conn)
            self._json_each = False  # the modules take their plain-SQL / Python paths
            return
        path = self.location
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(path, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout = 10000")
            # a new file gives the pages a finished run frees back (release_free_pages); an
            # existing one keeps its mode until release_free_pages converts it
            self._conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA cache_size = -8192")  # 8 MiB page cache (docs/run.md)
            # checkpoint every ~40 MiB of log, not every 4 MiB (finish_run truncates the log)
            self._conn.execute("PRAGMA wal_autocheckpoint = 10000")
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            migrate(self._conn, str(path))
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"cannot open the state database: {exc}",
                file=str(path),
                hint=f"point --state-db (or ${STATE_PATH_ENV}) at a writable SQLite file",
            ) from exc
        try:
            self._conn.execute("SELECT value FROM json_each('[]')").fetchall()
            self._json_each = True
        except sqlite3.OperationalError:  # an SQLite built without JSON functions
            self._json_each = False

    @property
    def is_postgres(self) -> bool:
        return isinstance(self.location, PgUrl)

    @property
    def snapshot_dir(self) -> Path | None:
        """The snapshot files' directory; None: they are kept in the (PostgreSQL) database."""
        return None if self.is_postgres else self.path.parent / "snapshots"

    @property
    def path(self) -> Path:
        """The SQLite file (a PostgreSQL store has none: ValueError)."""
        if isinstance(self.location, PgUrl):
            raise ValueError(f"the state store {self.location} is a PostgreSQL database")
        return self.location

    def pipeline_lock(self, pipeline: str) -> PipelineLock | PgPipelineLock:
        """The lock that keeps a second run of ``pipeline`` out: a ``flock``'d file beside
        the SQLite file, or an advisory lock of this store's PostgreSQL session (released
        with the session: no write without the lock)."""
        if isinstance(self.location, PgUrl):
            return PgPipelineLock(cast(PgConnection, self._conn), pipeline)
        return PipelineLock(self.location.parent, pipeline, self.location)

    # -- plumbing --------------------------------------------------------------------
    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (for the journal and mirror modules of this package)."""
        return self._conn

    @property
    def json_functions(self) -> bool:
        """Whether this SQLite has its JSON functions (``json_each``, ``json_extract``)."""
        return self._json_each

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested use joins the outer one."""
        if self._conn.in_transaction:
            yield self._conn
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            self._run_numbers.clear()  # a number given inside it may be gone with it
            raise
        self._conn.execute("COMMIT")

    def run_number(self, run_id: str) -> int:
        """The number the ledger names run ``run_id`` by (``run_numbers``), given on first
        use (in the caller's transaction, or one of its own)."""
        known = self._run_numbers.get(run_id)
        if known is not None:
            return known
        sql = "SELECT run_no FROM run_numbers WHERE run_id = ?"
        row = self._conn.execute(sql, (run_id,)).fetchone()
        if row is None:
            with self.transaction() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO run_numbers (run_id, at) VALUES (?, ?)",
                    (run_id, epoch_now()),
                )
                row = conn.execute(sql, (run_id,)).fetchone()
        self._run_numbers[run_id] = int(row[0])
        return int(row[0])

    def close(self) -> None:
        self._conn.close()

    def release_free_pages(self) -> int:
        """Give the pages left free in the SQLite file (a finished run's journal, a forgotten
        ledger) back to the file system; returns how many. A file made before this
        (``auto_vacuum`` off) is converted once, by a ``VACUUM``, when at least half of it
        is free (it is rewritten: a few seconds per 100 MB); a busy file is left as it is
        until the next time. PostgreSQL reclaims its own (autovacuum): nothing to do."""
        if self.is_postgres or self._conn.in_transaction:
            return 0
        conn = self._conn
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if not free:
            return 0
        try:
            if int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]) == AUTO_VACUUM_INCREMENTAL:
                # run to its end (execute() would step it once: one page)
                conn.executescript("PRAGMA incremental_vacuum;")
            elif free >= VACUUM_FROM_PAGES and 4 * free >= int(
                conn.execute("PRAGMA page_count").fetchone()[0]
            ):
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                conn.execute("VACUUM")
            else:
                return 0
        except sqlite3.OperationalError:  # busy (another pipeline's run), or no disk space
            return 0
        return free - int(conn.execute("PRAGMA freelist_count").fetchone()[0])

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def scope_id(self, pipeline: str, mapping: str, *, create: bool = True) -> int | None:
        """The integer id of (pipeline, mapping); ledger rows are keyed by it."""
        cached = self._scopes.get((pipeline, mapping))
        if cached is not None:
            return cached
        row = self._conn.execute(
            "SELECT scope_id FROM scopes WHERE pipeline = ? AND mapping = ?", (pipeline, mapping)
        ).fetchone()
        if row is None:
            if not create:
                return None
            sql = "INSERT INTO scopes (pipeline, mapping) VALUES (?, ?)"
            with self.transaction() as conn:
                if self.is_postgres:  # no lastrowid there
                    cur = conn.execute(f"{sql} RETURNING scope_id", (pipeline, mapping))
                    scope = int(cur.fetchone()[0])
                else:
                    scope = int(conn.execute(sql, (pipeline, mapping)).lastrowid or 0)
        else:
            scope = int(row[0])
        self._scopes[(pipeline, mapping)] = scope
        return scope

    # -- reads -----------------------------------------------------------------------
    def lookup_many(self, pipeline: str, mapping: str, keys: Iterable[str]) -> dict[str, Entry]:
        """Ledger entries for ``keys`` (keys without an entry are absent from the result)."""
        scope = self.scope_id(pipeline, mapping, create=False)
        found: dict[str, Entry] = {}
        if scope is None:
            return found
        batch: list[str] = []
        for key in keys:
            batch.append(key)
            if len(batch) >= sizes.LOOKUP_CHUNK:
                self._lookup_into(scope, batch, found)
                batch = []
        if batch:
            self._lookup_into(scope, batch, found)
        return found

    def _lookup_into(self, scope: int, keys: Sequence[str], out: dict[str, Entry]) -> None:
        where, params = self._keys_in(scope, keys)
        sql = f"{ENTRY_SQL} WHERE l.scope_id = ? AND l.source_key {where}"
        out.update({row[0]: entry(row) for row in self._conn.execute(sql, params).fetchall()})

    def _keys_in(self, scope: int, keys: Sequence[str]) -> tuple[str, tuple[object, ...]]:
        """``IN (...)`` for ``keys`` and its parameters (``scope`` first)."""
        # json_each: one bound parameter per chunk, ~30% faster than IN (?, ?, ...); SQLite's
        # JSON strings end at NUL, so a chunk with a NUL in a key takes the IN form.
        if self._json_each and "\x00" not in "".join(keys):
            return "IN (SELECT value FROM json_each(?))", (scope, json.dumps(keys))
        return f"IN ({','.join('?' * len(keys))})", (scope, *keys)

    def heads(self, scope: int, keys: Iterable[str]) -> dict[str, Head]:
        """What the ledger of ``scope`` says of ``keys``, as stored: key → (last run's
        number, status code, record id); keys without an entry are absent."""
        found: dict[str, Head] = {}
        wanted = list(keys)
        for at in range(0, len(wanted), sizes.LOOKUP_CHUNK):
            where, params = self._keys_in(scope, wanted[at : at + sizes.LOOKUP_CHUNK])
            rows = self._conn.execute(
                "SELECT source_key, last_run, last_status, record_id FROM ledger"
                f" WHERE scope_id = ? AND source_key {where}",
                params,
            )
            found.update({r[0]: (r[1], int(r[2]), r[3]) for r in rows.fetchall()})
        return found

    def owned_keys(self, pipeline: str, mapping: str, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` whose ledger entry holds a live record (a record id, not
        marked deleted): only the keys are read, no :class:`Entry` is made."""
        scope = self.scope_id(pipeline, mapping, create=False)
        found: set[str] = set()
        if scope is None:
            return found
        wanted = list(keys)
        for at in range(0, len(wanted), sizes.LOOKUP_CHUNK):
            where, params = self._keys_in(scope, wanted[at : at + sizes.LOOKUP_CHUNK])
            rows = self._conn.execute(
                f"SELECT source_key FROM ledger WHERE scope_id = ? AND source_key {where}"
                f" AND record_id IS NOT NULL AND {LIVE_SQL}",
                params,
            )
            found.update(r[0] for r in rows.fetchall())
        return found

    def has_entries(self, pipeline: str, mapping: str) -> bool:
        """Whether the ledger of (pipeline, mapping) holds any entry."""
        scope = self.scope_id(pipeline, mapping, create=False)
        if scope is None:
            return False
        row = self._conn.execute(
            "SELECT 1 FROM ledger WHERE scope_id = ? LIMIT 1", (scope,)
        ).fetchone()
        return row is not None

    def get(self, pipeline: str, mapping: str, key: str) -> Entry | None:
        return self.lookup_many(pipeline, mapping, (key,)).get(key)

    def entries(self, pipeline: str, mapping: str) -> Iterator[Entry]:
        """Every ledger entry of (pipeline, mapping), streamed in key order."""
        scope = self.scope_id(pipeline, mapping, create=False)
        if scope is None:
            return
        cur = self._conn.execute(
            f"{ENTRY_SQL} WHERE l.scope_id = ? ORDER BY l.source_key", (scope,)
        )
        while rows := cur.fetchmany(5000):
            yield from map(entry, rows)

    def keys(self, pipeline: str, mapping: str) -> Iterator[str]:
        """Every source key of (pipeline, mapping), streamed in key order."""
        for found in self.entries(pipeline, mapping):
            yield found.source_key

    def pipelines(self) -> list[str]:
        rows = self._conn.execute("SELECT DISTINCT pipeline FROM scopes ORDER BY 1")
        return [r[0] for r in rows]

    def mappings(self, pipeline: str) -> list[str]:
        rows = self._conn.execute(
            "SELECT mapping FROM scopes WHERE pipeline = ? ORDER BY mapping", (pipeline,)
        )
        return [r[0] for r in rows]

    def counts(self, pipeline: str) -> dict[str, dict[str, int]]:
        """``{mapping: {last_status: n, ...}}`` for ``recordsync state show``."""
        out: dict[str, dict[str, int]] = {m: {} for m in self.mappings(pipeline)}
        rows = self._conn.execute(
            "SELECT s.mapping, l.last_status, count(*) FROM ledger l"
            " JOIN scopes s ON s.scope_id = l.scope_id WHERE s.pipeline = ?"
            " GROUP BY s.mapping, l.last_status",
            (pipeline,),
        )
        for mapping, code, n in rows:
            out.setdefault(mapping, {})[STATUS_NAMES[int(code)]] = n
        return out

    # -- writes ----------------------------------------------------------------------
    def record_acknowledged(
        self,
        pipeline: str,
        mapping: str,
        run_id: str,
        rows: Iterable[tuple[str | None, int | None, str | None, str]],
    ) -> int:
        """Store acknowledged results ``(key, record_id, input_hash, status)`` in one
        transaction (call once per chunk). Returns the number of ledger rows written."""
        scope = self.scope_id(pipeline, mapping)
        assert scope is not None
        with self.transaction() as conn:
            return write_acknowledged(conn, scope, self.run_number(run_id), rows)

    def forget(self, pipeline: str, mapping: str | None = None) -> int:
        """``recordsync state reset``: drop what the store knows of one mapping (its ledger
        and its snapshots) or of a whole pipeline (every mapping's ledger and snapshots, and
        the journal of its runs); the number of ledger rows removed. The database's rows go
        in one transaction (the snapshot files beside an SQLite store are deleted inside it)."""
        with self.transaction() as conn:
            if mapping is None:
                scopes = [
                    r[0]
                    for r in conn.execute(
                        "SELECT scope_id FROM scopes WHERE pipeline = ?", (pipeline,)
                    )
                ]
                runs = [
                    r[0]
                    for r in conn.execute("SELECT run_id FROM runs WHERE pipeline = ?", (pipeline,))
                ]
                for run_id in runs:
                    conn.execute("DELETE FROM chunk_log WHERE run_id = ?", (run_id,))
                    conn.execute("DELETE FROM chunks WHERE run_id = ?", (run_id,))
                conn.execute("DELETE FROM runs WHERE pipeline = ?", (pipeline,))
            else:
                scope = self.scope_id(pipeline, mapping, create=False)
                scopes = [] if scope is None else [scope]
            drop_snapshots(conn, self.snapshot_dir, scopes)
            removed = 0
            for scope in scopes:
                cur = conn.execute("DELETE FROM ledger WHERE scope_id = ?", (scope,))
                removed += cur.rowcount
                conn.execute("DELETE FROM scopes WHERE scope_id = ?", (scope,))
        self._scopes.clear()
        self.release_free_pages()
        return removed


def drop_snapshots(conn: sqlite3.Connection, directory: Path | None, scopes: list[int]) -> None:
    """Remove the snapshots of ``scopes``, inside the caller's transaction (``directory``
    None: kept in the database)."""
    for scope in scopes:
        row = conn.execute("SELECT file FROM snapshots WHERE scope_id = ?", (scope,)).fetchone()
        conn.execute("DELETE FROM snapshots WHERE scope_id = ?", (scope,))
        if directory is None:
            conn.execute("DELETE FROM snapshot_blocks WHERE scope_id = ?", (scope,))
        elif row is not None:
            with contextlib.suppress(OSError):
                (directory / str(row[0])).unlink()


def state_exists(location: StateLocation) -> bool:
    """Whether there is state to read: an existing file, or a PostgreSQL database holding
    recordsync's tables (looked at without creating them)."""
    if isinstance(location, PgUrl):
        return pg.has_state(location)
    return location.is_file()

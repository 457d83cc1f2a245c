"""The tables of the state database, versioned with ``PRAGMA user_version``.

    scopes      (scope_id, pipeline, mapping)               one row per pipeline and mapping
    ledger      (scope_id, source_key) → record_id, input_hash, last_status, last_run
                (and updated_at up to version 6)            the identity ledger; since
                version 6 compact: the hash as bytes (8 since version 7: a 64-bit hash;
                16 in version 6), the status a small integer, the run a number from
                ``run_numbers``, the time epoch seconds, a row's own up to version 6, the
                run's since 7 (recordsync.state.ledger_rows); up to version 5 all text
    run_numbers run_no → run_id, at                         (version 6) the runs the ledger
                names; ``at`` (version 7): when the run got its number, epoch seconds
    runs        run_id → pipeline, state, started_at, finished_at, attempts
    chunks      (run_id, step, chunk_no) → mapping, first_source_row, row_count, state
    snapshots   scope_id → run_id, fingerprint, file, row_count   (version 2) the source-row
                digests of the scope's last complete run (recordsync.state.snapshots)
    targets     target_id → url, users, first_seen, last_seen    (version 4) the services a
                state has written to (recordsync.state.targets); every ledger scope and run
                of a bound pipeline is kept under ``pipeline + U+001F + target_id``
    target_marks (scope, object_type) → mark, total, run_id, checked_at   (version 4) what
                the target looked like when a run last checked it (the newest ``updated_at``
                the service stamped, and its record count)
    chunk_log   (run_id, step, chunk_no) → first_row, last_row, plain, rows, outcomes
                (version 3) the per-row journal, one record a chunk: ``rows`` (JSON, written
                when the chunk is begun: source row, key, input hash, resend-safe) until its
                ``outcomes`` (JSON: source row, key, input hash, status, record id, error) are
                written when it is acknowledged or settled. Version 1 and 2 kept one row a
                source row (``chunk_rows``); the upgrade copies it over. Since version 5 a
                finished run's outcomes are kept (its ``rows`` are cleared when acknowledged)
                until the history's retention prunes them: ``recordsync history --key``;
                of those, only what the ledger cannot tell (recordsync.state.kept_outcomes)
    run_history run_id → pipeline, state_key, target, started_at, finished_at, exit_code,
                report_dir, whole_run, steps (JSON), totals (JSON), conditions (JSON),
                alerted (JSON), seq (the order records were kept in)   (version 5) one
                record a run (recordsync.state.history): what it did, the health
                conditions it raised and the alert state it left

A database written by a newer recordsync (higher version) is refused, not guessed at.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from recordsync.core.errors import ConfigError
from recordsync.state.hash_upgrade import cut_journal_hashes
from recordsync.state.ledger_rows import STATUS_CODES, hash_v6_to_v7, pack_hash, pack_hash_v6

SCHEMA_VERSION = 7

_V1 = """
CREATE TABLE IF NOT EXISTS scopes (
    scope_id INTEGER PRIMARY KEY,
    pipeline TEXT NOT NULL,
    mapping TEXT NOT NULL,
    UNIQUE (pipeline, mapping)
);
CREATE TABLE IF NOT EXISTS ledger (
    scope_id INTEGER NOT NULL,
    source_key TEXT NOT NULL,
    record_id INTEGER,
    input_hash TEXT,
    last_status TEXT NOT NULL,
    last_run_id TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope_id, source_key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS runs_by_pipeline ON runs (pipeline, started_at);
CREATE TABLE IF NOT EXISTS chunks (
    run_id TEXT NOT NULL,
    step TEXT NOT NULL,
    chunk_no INTEGER NOT NULL,
    mapping TEXT NOT NULL,
    first_source_row INTEGER,
    row_count INTEGER NOT NULL,
    state TEXT NOT NULL,
    begun_at TEXT NOT NULL,
    acked_at TEXT,
    PRIMARY KEY (run_id, step, chunk_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunk_rows (
    run_id TEXT NOT NULL,
    step TEXT NOT NULL,
    chunk_no INTEGER NOT NULL,
    source_row INTEGER NOT NULL,
    source_key TEXT,
    input_hash TEXT,
    resend_safe INTEGER NOT NULL,
    status TEXT NOT NULL,
    record_id INTEGER,
    error TEXT,
    PRIMARY KEY (run_id, step, chunk_no, source_row)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS chunk_rows_once
    ON chunk_rows (run_id, step, source_row) WHERE status <> 'retry';
"""

_V2 = """
CREATE TABLE IF NOT EXISTS snapshots (
    scope_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    file TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    written_at TEXT NOT NULL
);
"""
_V3 = """
CREATE TABLE IF NOT EXISTS chunk_log (
    run_id TEXT NOT NULL,
    step TEXT NOT NULL,
    chunk_no INTEGER NOT NULL,
    first_row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    plain INTEGER NOT NULL,
    rows TEXT,
    outcomes TEXT,
    PRIMARY KEY (run_id, step, chunk_no)
);
"""

_V4 = """
CREATE TABLE IF NOT EXISTS targets (
    target_id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    users TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS targets_by_url ON targets (url);
CREATE TABLE IF NOT EXISTS target_marks (
    scope TEXT NOT NULL,
    object_type TEXT NOT NULL,
    mark TEXT,
    total INTEGER,
    run_id TEXT NOT NULL,
    checked_at TEXT NOT NULL,
    PRIMARY KEY (scope, object_type)
);
"""

_V5 = """
CREATE TABLE IF NOT EXISTS run_history (
    run_id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    state_key TEXT NOT NULL,
    target TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    exit_code INTEGER NOT NULL,
    report_dir TEXT,
    whole_run INTEGER NOT NULL,
    steps TEXT NOT NULL,
    totals TEXT NOT NULL,
    conditions TEXT NOT NULL,
    alerted TEXT NOT NULL,
    seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS run_history_by_pipeline ON run_history (pipeline, started_at);
CREATE INDEX IF NOT EXISTS run_history_by_key ON run_history (state_key, seq)
"""


_STATUS_CASE = " ".join(f"WHEN '{name}' THEN {code}" for name, code in STATUS_CODES.items())

_V6 = f"""
CREATE TABLE IF NOT EXISTS run_numbers (
    run_no INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE
);
ALTER TABLE ledger RENAME TO ledger_v5;
CREATE TABLE ledger (
    scope_id INTEGER NOT NULL,
    source_key TEXT NOT NULL,
    record_id INTEGER,
    input_hash BLOB,
    last_status INTEGER NOT NULL,
    last_run INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (scope_id, source_key)
) WITHOUT ROWID;
INSERT OR IGNORE INTO run_numbers (run_id)
    SELECT last_run_id FROM ledger_v5 WHERE last_run_id IS NOT NULL
    GROUP BY last_run_id ORDER BY min(updated_at);
INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status, last_run,
    updated_at)
    SELECT l.scope_id, l.source_key, l.record_id, rs_pack_hash_v6(l.input_hash),
    CASE l.last_status {_STATUS_CASE} ELSE {STATUS_CODES["failed"]} END, r.run_no,
    coalesce(CAST(strftime('%s', l.updated_at) AS INTEGER), 0)
    FROM ledger_v5 l LEFT JOIN run_numbers r ON r.run_id = l.last_run_id
    ORDER BY l.scope_id, l.source_key;
DROP TABLE ledger_v5
"""
"""Version 6: the ledger compact (module docstring). A status version 5 did not know is kept
as ``failed``: the row is sent again."""

_V7 = """
ALTER TABLE run_numbers ADD COLUMN at INTEGER;
CREATE TEMP TABLE run_at AS SELECT last_run AS run_no, max(updated_at) AS at FROM ledger
    WHERE last_run IS NOT NULL GROUP BY last_run;
UPDATE run_numbers SET at = (SELECT a.at FROM temp.run_at a WHERE a.run_no = run_numbers.run_no);
DROP TABLE temp.run_at;
ALTER TABLE ledger RENAME TO ledger_v6;
CREATE TABLE ledger (
    scope_id INTEGER NOT NULL,
    source_key TEXT NOT NULL,
    record_id INTEGER,
    input_hash BLOB,
    last_status INTEGER NOT NULL,
    last_run INTEGER,
    PRIMARY KEY (scope_id, source_key)
) WITHOUT ROWID;
INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status, last_run)
    SELECT scope_id, source_key, record_id, rs_hash_v7(input_hash), last_status, last_run
    FROM ledger_v6 ORDER BY scope_id, source_key;
DROP TABLE ledger_v6
"""
"""Version 7: the input hashes 64 bits (:mod:`recordsync.state.hash_upgrade`), and no time a
row: the run's (``run_numbers.at``: for a run named before, the newest time of the rows it
wrote); the ledger rewritten in key order; then the journal of a run still running
(:func:`cut_journal_hashes`)."""


def _v3_copy(conn: sqlite3.Connection) -> None:
    """The per-row journal of version 1 and 2 (``chunk_rows``) into ``chunk_log``: a begun
    chunk's rows (all ``pending``) as ``rows``, an acknowledged or settled one's as
    ``outcomes``; then the old table goes."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunk_rows'").fetchone() is None:
        return
    cur = conn.execute(
        "SELECT run_id, step, chunk_no, source_row, source_key, input_hash, resend_safe,"
        " status, record_id, error FROM chunk_rows ORDER BY run_id, step, chunk_no, source_row"
    )
    current: tuple[str, str, int] | None = None
    rows: list[tuple[object, ...]] = []

    def flush() -> None:
        if current is None or not rows:
            return
        pending = all(r[7] == "pending" for r in rows)
        begun = [[r[3], r[4], r[5], bool(r[6])] for r in rows] if pending else None
        done = None if pending else [[r[3], r[4], r[5], r[7], r[8], r[9]] for r in rows]
        plain = not any("\x00" in str(r[4] or "") + str(r[5] or "") for r in rows)
        conn.execute(
            "INSERT INTO chunk_log (run_id, step, chunk_no, first_row, last_row, plain, rows,"
            " outcomes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *current,
                min(r[3] for r in rows),  # type: ignore[type-var]
                max(r[3] for r in rows),  # type: ignore[type-var]
                int(plain),
                None if begun is None else json.dumps(begun),
                None if done is None else json.dumps(done),
            ),
        )

    for row in cur:
        key = (row[0], row[1], row[2])
        if key != current:
            flush()
            current, rows = key, []
        rows.append(row)
    flush()
    conn.execute("DROP INDEX IF EXISTS chunk_rows_once")
    conn.execute("DROP TABLE chunk_rows")


_STEPS: tuple[tuple[int, str, Callable[[sqlite3.Connection], None] | None], ...] = (
    (1, _V1, None),
    (2, _V2, None),
    (3, _V3, _v3_copy),
    (4, _V4, None),
    (5, _V5, None),
    (6, _V6, None),
    (7, _V7, cut_journal_hashes),
)


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the state's statements use on this connection: ``rs_pack_hash``
    (:func:`recordsync.state.ledger_rows.pack_hash`: this SQLite may have no ``unhex``), and
    for the upgrades ``rs_pack_hash_v6`` and ``rs_hash_v7``."""
    conn.create_function("rs_pack_hash", 1, pack_hash, deterministic=True)
    conn.create_function("rs_pack_hash_v6", 1, pack_hash_v6, deterministic=True)
    conn.create_function("rs_hash_v7", 1, hash_v6_to_v7, deterministic=True)


def _current(conn: sqlite3.Connection, path: str) -> bool:
    """Whether the schema is this version's; ConfigError for a newer one."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the state database has schema version {version}; this recordsync knows"
            f" up to {SCHEMA_VERSION}",
            file=path,
            hint="upgrade recordsync, or point --state-db at another file",
        )
    return version == SCHEMA_VERSION


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Create or upgrade the schema to :data:`SCHEMA_VERSION`."""
    register_functions(conn)
    if _current(conn, path):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _current(conn, path):  # upgraded by another process while this one waited
            conn.execute("ROLLBACK")
            return
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        for target, script, then in _STEPS:
            if version < target:
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if then is not None:
                    then(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

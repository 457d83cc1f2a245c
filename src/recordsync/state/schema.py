"""The tables of the state database, versioned with ``PRAGMA user_version``.

    scopes      (scope_id, pipeline, mapping)               one row per pipeline and mapping
    ledger      (scope_id, source_key) → record_id, input_hash, last_status, last_run_id,
                updated_at                                  the identity ledger
    runs        run_id → pipeline, state, started_at, finished_at, attempts
    chunks      (run_id, step, chunk_no) → mapping, first_source_row, row_count, state
    chunk_rows  (run_id, step, chunk_no, source_row) → source_key, input_hash, resend_safe,
                status, record_id, error                    the per-row journal
    snapshots   scope_id → run_id, fingerprint, file, row_count   (version 2) the source-row
                digests of the scope's last complete run (recordsync.state.snapshots)

A database written by a newer recordsync (higher version) is refused, not guessed at.
"""

from __future__ import annotations

import sqlite3

from recordsync.errors import ConfigError

SCHEMA_VERSION = 2

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
_STEPS = ((1, _V1), (2, _V2))


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Create or upgrade the schema to :data:`SCHEMA_VERSION`."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the state database has schema version {version}; this recordsync knows"
            f" up to {SCHEMA_VERSION}",
            file=path,
            hint="upgrade recordsync, or point --state-db at another file",
        )
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for target, script in _STEPS:
            if version < target:
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

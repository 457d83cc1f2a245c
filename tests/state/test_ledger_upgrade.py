"""The compact ledger (state schema version 6) and the upgrade of a version 5 ledger, on SQLite
and on PostgreSQL: every entry reads back as it was written (hash, status, run, time to the
second), and a run after the upgrade decides, writes and reports as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from recordsync.state import ChangeDetector, ChunkResult, Journal, JournalRow, StateStore, schema
from recordsync.state import input_hash as hash_of
from recordsync.state.history import RunHistory
from recordsync.state.ledger_rows import STATUS_CODES, Entry
from recordsync.state.schema import _V1, _V2, _V3, _V4, _V5, SCHEMA_VERSION

from .conftest import prepared
from .test_history import rec

HEX = "0123456789abcdef" * 2
V5_ROWS = [  # source_key, record_id, input_hash, last_status, last_run_id, updated_at
    ("a@x", 1, HEX, "created", "20261101T020000Z-aaaa", "2026-11-01T02:00:01.250Z"),
    (
        "b@x",
        2,
        "fedcba9876543210" * 2,
        "updated",
        "20261102T020000Z-bbbb",
        "2026-11-02T02:00:07.000Z",
    ),
    ("c@x", None, None, "failed", "20261102T020000Z-bbbb", "2026-11-02T02:00:08.000Z"),
    ("d@x", 4, None, "deleted", "20261102T020000Z-bbbb", "2026-11-02T02:00:09.000Z"),
    ("e@x", 5, "h", "in_doubt", None, "2026-11-02T02:00:10.000Z"),
    ("f@x", 6, "fifteen chars!!", "created", "20261101T020000Z-aaaa", "2026-11-01T02:00:11.000Z"),
    ("g@x", 7, HEX.upper(), "planned", "20261101T020000Z-aaaa", "2026-11-01T02:00:12.000Z"),
]
"""A version 5 ledger: hashes as text (a real one, and the odd texts tests write: short, 15
bytes, upper case), every status and one version 5 never wrote (kept as ``failed``)."""


def _expected() -> list[Entry]:
    """The rows as version 7 reads them: a hash's first 64 bits, and the time of the run
    (the newest of its rows, to the second; none without a run)."""
    newest: dict[str | None, str] = {}
    for *_, run, when in V5_ROWS:
        newest[run] = max(newest.get(run, ""), when[:19] + ".000Z")
    out = []
    for key, rid, h, status, run, _when in V5_ROWS:
        status = "failed" if status == "planned" else status
        if h is not None and len(h) == 32 and h == h.lower():  # a hash: its first 64 bits
            h = h[:16]
        out.append(Entry(key, rid, h, status, run, newest[run] if run is not None else ""))
    return out


V5_LEDGER = """
CREATE TABLE ledger (
    scope_id BIGINT NOT NULL, source_key TEXT COLLATE "C" NOT NULL, record_id BIGINT,
    input_hash TEXT, last_status TEXT NOT NULL, last_run_id TEXT, updated_at TEXT NOT NULL,
    PRIMARY KEY (scope_id, source_key))
"""
"""PostgreSQL's ledger as version 5 made it."""


def _fill_v5(conn: sqlite3.Connection, scope: int = 1) -> None:
    conn.executemany(
        "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
        " last_run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(scope, *row) for row in V5_ROWS],
    )


def _check_upgraded(store: StateStore) -> None:
    assert list(store.entries("p", "contacts")) == _expected()
    assert store.get("p", "contacts", "a@x") == _expected()[0]
    assert store.counts("p") == {
        "contacts": {"created": 2, "updated": 1, "failed": 2, "deleted": 1, "in_doubt": 1}
    }
    # a row sent since with the same input is unchanged; a deleted key's row reappears
    row_a, row_d = prepared(1, "a@x"), prepared(4, "d@x")
    assert row_a.payload is not None and row_d.payload is not None
    store.record_acknowledged(
        "p", "contacts", "r-after", [("a@x", 1, hash_of(row_a.payload), "updated")]
    )
    result = ChangeDetector(store, "p", "contacts").classify([row_a, row_d])
    assert [u.row.source.source_row for u in result.unchanged] == [1]
    assert [(t.row.key, t.reason.value) for t in result.to_send] == [("d@x", "reappeared")]
    entry = store.get("p", "contacts", "a@x")
    assert entry is not None and entry.last_run_id == "r-after" and entry.last_status == "updated"
    # the runs named before the upgrade keep their numbers; a new run takes the next one
    numbers = dict(store.connection.execute("SELECT run_id, run_no FROM run_numbers").fetchall())
    assert numbers["r-after"] == 1 + max(
        numbers["20261101T020000Z-aaaa"], numbers["20261102T020000Z-bbbb"]
    )


def test_a_version_5_ledger_is_made_compact_and_reads_back_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in (_V1, _V2, _V3, _V4, _V5):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 5")
    conn.execute("INSERT INTO scopes (scope_id, pipeline, mapping) VALUES (1, 'p', 'contacts')")
    _fill_v5(conn)
    conn.close()
    with StateStore(path, durable=False) as store:
        conn = store.connection
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        assert "ledger_v5" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        kinds = conn.execute(
            "SELECT typeof(input_hash), length(input_hash), typeof(last_status),"
            " typeof(last_run) FROM ledger WHERE source_key = 'b@x'"
        ).fetchone()
        assert kinds == ("blob", 8, "integer", "integer")
        columns = [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
        assert columns == [
            "scope_id",
            "source_key",
            "record_id",
            "input_hash",
            "last_status",
            "last_run",
        ]  # no time a row (version 7): the run's
        _check_upgraded(store)
    with StateStore(path, durable=False) as store:  # opened again: nothing to upgrade
        assert store.get("p", "contacts", "b@x") == _expected()[1]


def test_on_postgresql_a_version_5_ledger_is_made_compact(pg_url: str) -> None:
    with StateStore(pg_url) as store:  # made at version 6, its ledger then put back to 5
        conn = store.connection
        conn.execute("DROP TABLE ledger")
        conn.execute("DROP TABLE run_numbers")
        conn.execute(V5_LEDGER)
        conn.execute("CREATE INDEX ledger_by_record ON ledger (scope_id, record_id)")
        conn.execute("UPDATE state_meta SET value = '5' WHERE key = 'schema_version'")
        scope = store.scope_id("p", "contacts")
        assert scope is not None
        _fill_v5(conn, scope)
    with StateStore(pg_url) as store:
        conn = store.connection
        version = conn.execute("SELECT value FROM state_meta WHERE key = 'schema_version'")
        assert version.fetchone()[0] == str(SCHEMA_VERSION)
        stored = conn.execute(
            "SELECT l.input_hash, l.last_status, r.at FROM ledger l JOIN run_numbers r"
            " ON r.run_no = l.last_run WHERE l.source_key = 'b@x'"
        ).fetchone()
        assert (bytes(stored[0]).hex(), stored[1], stored[2]) == (
            str(V5_ROWS[1][2])[:16],
            STATUS_CODES["updated"],
            1793584809,  # 2026-11-02T02:00:09Z: the newest row of its run
        )
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = 'ledger'"
        ).fetchall()
        assert "updated_at" not in {c[0] for c in columns}
        _check_upgraded(store)


def test_a_keys_deletion_names_its_run_after_the_upgrade(tmp_path: Path) -> None:
    """``recordsync history --key``: a delete is read from the ledger, its run by number."""
    with StateStore(tmp_path / "s.db", durable=False) as store:
        j = Journal(store, "p\x1f1")
        j.start_run("r1")
        j.begin_chunk("r1", "s", 1, 1, [JournalRow(1, "k1", HEX)])
        j.ack_chunk("r1", "s", 1, [ChunkResult(1, "created", 101)])
        j.finish_run("r1", keep_rows=True)
        RunHistory(store).record(rec("r1", "2026-11-01T02:00:00Z"))
        scope = store.scope_id("p\x1f1", "s")
        store.connection.execute(
            "UPDATE ledger SET last_status = ?, last_run = ? WHERE scope_id = ?",
            (STATUS_CODES["deleted"], store.run_number("r1"), scope),
        )
        events = RunHistory(store).key_events("p", "k1")
        assert {(e.run_id, e.status) for e in events} == {("r1", "deleted")}
        assert store.get("p\x1f1", "s", "k1") == Entry(
            "k1",
            101,
            HEX,
            "deleted",
            "r1",
            store.get("p\x1f1", "s", "k1").updated_at,  # type: ignore[union-attr]
        )


class _Racing:
    """A connection that lets another process upgrade the file just before it takes the
    write lock (``BEGIN IMMEDIATE``)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path, self.raced = conn, path, False

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        self.conn.create_function(*args, **kwargs)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("BEGIN") and not self.raced:
            self.raced = True
            StateStore(self.path, durable=False).close()  # the other process's upgrade
        return self.conn.execute(sql, *args)


def test_an_upgrade_done_by_another_process_meanwhile_is_not_done_twice(tmp_path: Path) -> None:
    """Two runs open a version 5 file at once: the second one waits for the write lock and
    then finds version 6; it must not rewrite the ledger again (its text columns are gone)."""
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in (_V1, _V2, _V3, _V4, _V5):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 5")
    conn.execute("INSERT INTO scopes (scope_id, pipeline, mapping) VALUES (1, 'p', 'contacts')")
    _fill_v5(conn)
    racing = _Racing(conn, path)
    schema.migrate(racing, str(path))  # type: ignore[arg-type]
    assert racing.raced
    conn.close()
    with StateStore(path, durable=False) as store:
        assert list(store.entries("p", "contacts")) == _expected()

"""The 64-bit input hashes (state schema version 7) and the upgrade of a version 6 state, on
SQLite and on PostgreSQL: the ledger's hashes are cut to the 64 bits ``input_hash`` gives now
(so a row unchanged before is unchanged after: nothing is sent again), other texts read back
as written, and a run that died under version 6 resumes without sending again what it
acknowledged (its journal's hashes are cut too)."""

from __future__ import annotations

import json
import sqlite3
from hashlib import blake2b
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from recordsync.state import ChangeDetector, Journal, StateStore, schema
from recordsync.state import input_hash as hash_of
from recordsync.state.hashing import canonical_input
from recordsync.state.journal_codec import pack
from recordsync.state.ledger_rows import (
    STATUS_CODES,
    hash_v6_to_v7,
    pack_hash,
    pack_hash_v6,
    unpack_hash,
)
from recordsync.state.schema import _V1, _V2, _V3, _V4, _V5, _V6, SCHEMA_VERSION

from .conftest import prepared

ODD = ["h", "seven c", "fifteen chars!!", "0123456789abcdef" * 2 + "x", "ABCDEF0123456789"]
"""Texts that are not a 64-bit hash (tests write such): 1, 7 and 15 bytes (the lengths the
tags of version 6 and 7 treat apart), longer, upper case."""
CREATED = STATUS_CODES["created"]


def _v6_hash(payload: dict[str, object]) -> str:
    """The 128-bit hash version 6 kept (BLAKE2b-128 of the same canonical input)."""
    return blake2b(canonical_input(payload), digest_size=16).hexdigest()


def _v6_ledger(conn: sqlite3.Connection, scope: int, run_no: int) -> list[str]:
    """Version 6 ledger rows: a@x..e@x with real 128-bit hashes of their inputs, the odd texts
    under o0@x...; the keys with a hash."""
    rows = []
    keys = []
    for i, key in enumerate(["a@x", "b@x", "c@x", "d@x", "e@x"]):
        payload = prepared(i + 1, key).payload
        assert payload is not None
        rows.append(
            (scope, key, 100 + i, pack_hash_v6(_v6_hash(payload)), CREATED, run_no, 1793584807)
        )
        keys.append(key)
    for i, text in enumerate(ODD):
        rows.append((scope, f"o{i}@x", 200 + i, pack_hash_v6(text), CREATED, run_no, 1793584807))
    conn.executemany(
        "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
        " last_run, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return keys


def _v6_journal(conn: sqlite3.Connection, pipeline: str) -> None:
    """A run that died under version 6: chunk 1 acknowledged (f@x created), chunk 2 begun."""
    row_f, row_g = prepared(6, "f@x").payload, prepared(7, "g@x").payload
    assert row_f is not None and row_g is not None
    conn.execute(
        "INSERT INTO runs (run_id, pipeline, state, started_at) VALUES"
        " ('dead', ?, 'running', '2026-11-02T02:00:00.000Z')",
        (pipeline,),
    )
    for n, state in ((1, "acked"), (2, "begun")):
        conn.execute(
            "INSERT INTO chunks (run_id, step, chunk_no, mapping, first_source_row, row_count,"
            " state, begun_at) VALUES ('dead', 'contacts', ?, 'contacts', ?, 1, ?,"
            " '2026-11-02T02:00:00.000Z')",
            (n, 5 + n, state),
        )
    acked = pack([(6, "f@x", _v6_hash(row_f), "created", 106, None)])
    begun = json.dumps([[7, "g@x", _v6_hash(row_g), True]])
    conn.execute(
        "INSERT INTO chunk_log (run_id, step, chunk_no, first_row, last_row, plain, rows,"
        " outcomes) VALUES ('dead', 'contacts', 1, 6, 6, 1, NULL, ?),"
        " ('dead', 'contacts', 2, 7, 7, 1, ?, NULL)",
        (acked, begun),
    )


def _check_v7(store: StateStore, keys: list[str]) -> None:
    conn = store.connection
    stored = conn.execute(
        "SELECT length(input_hash) FROM ledger WHERE source_key IN ('a@x', 'b@x')"
    ).fetchall()
    assert [r[0] for r in stored] == [8, 8]
    entries = {e.source_key: e for e in store.entries("p", "contacts")}
    # no time a row since version 7: the run's, the newest of the rows it wrote
    assert {e.updated_at for e in entries.values()} == {"2026-11-02T02:00:07.000Z"}
    columns = (
        conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = 'ledger'"
        )
        if store.is_postgres
        else conn.execute("SELECT name FROM pragma_table_info('ledger')")
    )
    assert "updated_at" not in {c[0] for c in columns.fetchall()}
    for i, text in enumerate(ODD):
        assert entries[f"o{i}@x"].input_hash == text
    # the rows hashed as version 6 did are unchanged now: nothing is sent again
    rows = [prepared(i + 1, key) for i, key in enumerate(keys)]
    for row in rows:
        assert row.payload is not None
        assert entries[str(row.key)].input_hash == hash_of(row.payload)
    result = ChangeDetector(store, "p", "contacts").classify(rows)
    assert len(result.unchanged) == len(keys) and not result.to_send
    # the dead run's journal: what it acknowledged is found by key and hash on resume
    journal = Journal(store, "p")
    dead = journal.last_incomplete_run()
    assert dead is not None and dead.run_id == "dead"
    done = journal.journaled_rows("dead", "contacts")
    row_f, row_g = prepared(6, "f@x"), prepared(7, "g@x")
    assert row_f.payload is not None and row_g.payload is not None
    found = done.take("f@x", hash_of(row_f.payload), 6)
    assert found is not None and (found.status, found.record_id) == ("created", 106)
    (pending,) = journal.pending_chunks("dead")
    assert [(r.key, r.input_hash) for r in pending.rows] == [("g@x", hash_of(row_g.payload))]


def test_a_version_6_state_is_upgraded_to_64_bit_hashes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.register_functions(conn)
    for script in (_V1, _V2, _V3, _V4, _V5, _V6):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 6")
    conn.execute("INSERT INTO scopes (scope_id, pipeline, mapping) VALUES (1, 'p', 'contacts')")
    conn.execute("INSERT INTO run_numbers (run_no, run_id) VALUES (1, 'before')")
    keys = _v6_ledger(conn, 1, 1)
    _v6_journal(conn, "p")
    conn.close()
    with StateStore(path, durable=False) as store:
        version = store.connection.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION == 7
        _check_v7(store, keys)
    with StateStore(path, durable=False) as store:  # opened again: nothing to upgrade
        assert store.get("p", "contacts", "o2@x").input_hash == ODD[2]  # type: ignore[union-attr]


def test_on_postgresql_a_version_6_state_is_upgraded_to_64_bit_hashes(pg_url: str) -> None:
    with StateStore(pg_url) as store:  # made at version 7, then filled as version 6 had it
        conn = store.connection
        scope = store.scope_id("p", "contacts")
        assert scope is not None
        run_no = store.run_number("before")
        conn.execute("ALTER TABLE ledger ADD COLUMN updated_at BIGINT NOT NULL DEFAULT 0")
        conn.execute("ALTER TABLE run_numbers DROP COLUMN at")
        keys = _v6_ledger(conn, scope, run_no)
        _v6_journal(conn, "p")
        conn.execute("UPDATE state_meta SET value = '6' WHERE key = 'schema_version'")
        assert conn.execute("SELECT length(input_hash) FROM ledger").fetchone()[0] > 8
    with StateStore(pg_url) as store:
        version = store.connection.execute(
            "SELECT value FROM state_meta WHERE key = 'schema_version'"
        ).fetchone()[0]
        assert version == str(SCHEMA_VERSION)
        _check_v7(store, keys)


@given(st.text(max_size=40) | st.binary(min_size=8, max_size=8).map(bytes.hex))
def test_a_hash_round_trips_and_only_a_hash_takes_8_bytes(text: str) -> None:
    stored = pack_hash(text)
    assert stored is not None and unpack_hash(stored) == text
    is_hash = len(text) == 16 and all(c in "0123456789abcdef" for c in text)
    assert (len(stored) == 8) == is_hash
    assert pack_hash(None) is None and unpack_hash(None) is None


@given(st.text(max_size=40) | st.binary(min_size=16, max_size=16).map(bytes.hex))
def test_a_version_6_value_becomes_version_7s(text: str) -> None:
    """A 128-bit hash keeps its first 64 bits; any other text reads back as it was."""
    upgraded = unpack_hash(hash_v6_to_v7(pack_hash_v6(text)))
    is_v6_hash = len(text) == 32 and all(c in "0123456789abcdef" for c in text)
    assert upgraded == (text[:16] if is_v6_hash else text)

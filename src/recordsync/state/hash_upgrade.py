"""The upgrade to 64-bit input hashes (state schema version 7), on SQLite and on PostgreSQL.

:func:`recordsync.state.hashing.input_hash` gives the first 16 of the 32 hex characters it gave
up to version 6, so cutting what the state holds keeps every comparison as it was: a row
unchanged before the upgrade is unchanged after it, nothing is sent again. Cut are the
ledger's hashes (:func:`.ledger_rows.hash_v6_to_v7`; SQLite rewrites the table in key order,
PostgreSQL updates it in place: :func:`cut_ledger_hashes_pg`) and the hashes in the journal of
a run still running (:func:`cut_journal_hashes`): a resume finds the rows the dead attempt
journaled by key and hash. A finished run's kept outcomes hold no hash.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from recordsync.state.journal_codec import decode, json_text, pack
from recordsync.state.ledger_rows import hash_v6_to_v7

_V6_HASH = re.compile(r"[0-9a-f]{32}")
_HEX = 16


def cut(value: Any) -> Any:
    """A journaled input hash as version 7 has it: a 128-bit one's first 64 bits; any other
    value as it is."""
    if isinstance(value, str) and len(value) == 2 * _HEX and _V6_HASH.fullmatch(value):
        return value[:_HEX]
    return value


def cut_journal_hashes(conn: sqlite3.Connection) -> None:
    """The input hashes in the journal of the runs still ``running``: in each chunk's rows
    (source row, key, hash, resend-safe) and outcomes (source row, key, hash, ...)."""
    chunks = conn.execute(
        "SELECT l.run_id, l.step, l.chunk_no, l.rows, l.outcomes FROM chunk_log l"
        " JOIN runs r ON r.run_id = l.run_id WHERE r.state = 'running'"
    ).fetchall()
    for run_id, step, chunk_no, rows, outcomes in chunks:
        new_rows = None if rows is None else json_text(_cut_rows(json.loads(rows)))
        new_outcomes = None if outcomes is None else pack(_cut_rows(decode(outcomes)))
        conn.execute(
            "UPDATE chunk_log SET rows = ?, outcomes = ? WHERE run_id = ? AND step = ?"
            " AND chunk_no = ?",
            (new_rows, new_outcomes, run_id, step, chunk_no),
        )


def _cut_rows(rows: list[list[Any]]) -> list[tuple[Any, ...]]:
    return [(r[0], r[1], cut(r[2]), *r[3:]) for r in rows]


def cut_ledger_hashes_pg(conn: sqlite3.Connection) -> None:
    """A version 6 PostgreSQL ledger's hashes as version 7 keeps them, in place: the texts
    that are not a hash (never 16 bytes in version 6) read before the hashes are cut, then
    tagged anew (:func:`.ledger_rows.hash_v6_to_v7`)."""
    odd = conn.execute(
        "SELECT scope_id, source_key, input_hash FROM ledger"
        " WHERE input_hash IS NOT NULL AND length(input_hash) <> 16"
    ).fetchall()
    conn.execute(
        "UPDATE ledger SET input_hash = substring(input_hash from 1 for 8)"
        " WHERE length(input_hash) = 16"
    )
    conn.executemany(
        "UPDATE ledger SET input_hash = ? WHERE scope_id = ? AND source_key = ?",
        [(hash_v6_to_v7(stored), scope, key) for scope, key, stored in odd],
    )

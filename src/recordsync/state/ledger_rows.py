"""The identity ledger's rows and update rules, shared by the store
(:mod:`recordsync.state.store`) and the journal's bulk fold
(:mod:`recordsync.state.journal`): what an acknowledged result writes.

    created / updated   record_id (kept when the service gave none), input_hash, status, run
    failed / in_doubt   only last_status and last_run_id: the row is sent again next run
    anything else       ignored (unchanged, invalid and duplicate rows were not sent)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

ACKED_SENT = frozenset({"created", "updated"})
ACKED_FAILED = frozenset({"failed", "in_doubt"})
DELETED = "deleted"


class Entry(NamedTuple):
    """One ledger row: what the last acknowledged send of ``source_key`` left behind."""

    source_key: str
    record_id: int | None
    input_hash: str | None
    last_status: str
    last_run_id: str | None
    updated_at: str


class AckRow(NamedTuple):
    """One acknowledged result for :meth:`StateStore.record_acknowledged`."""

    key: str | None
    record_id: int | None
    input_hash: str | None
    status: str


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


LEDGER_ON_CONFLICT = (
    " ON CONFLICT (scope_id, source_key) DO UPDATE SET"
    " record_id = CASE WHEN excluded.last_status IN ('created', 'updated')"
    " THEN coalesce(excluded.record_id, ledger.record_id) ELSE ledger.record_id END,"
    " input_hash = CASE WHEN excluded.last_status IN ('created', 'updated')"
    " THEN excluded.input_hash ELSE ledger.input_hash END,"
    " last_status = excluded.last_status, last_run_id = excluded.last_run_id,"
    " updated_at = excluded.updated_at"
)
"""The ledger update rules, for an insert of ledger rows (one at a time here, or in bulk from
the journal: ``recordsync.state.journal``)."""

LEDGER_UPSERT = (
    "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
    " last_run_id, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)" + LEDGER_ON_CONFLICT
)
"""The ledger update rules, one row at a time: created / updated write the record id (kept
when none is given) and the hash; failed / in_doubt only the status and run (a new key gets
no record id and no hash). ``recordsync.state.journal`` applies the same rules in bulk."""


def write_acknowledged(
    conn: sqlite3.Connection,
    scope: int,
    run_id: str,
    rows: Iterable[tuple[str | None, int | None, str | None, str]],
) -> int:
    """The ledger update rules (module docstring), inside the caller's transaction; in row
    order (a key given twice ends with its last result)."""
    now = utc_now()
    params: list[tuple[object, ...]] = []
    for key, record_id, input_hash, status in rows:
        if key is None:
            continue
        status = str(status)
        if status in ACKED_SENT:
            params.append((scope, key, record_id, input_hash, status, run_id, now))
        elif status in ACKED_FAILED:
            params.append((scope, key, None, None, status, run_id, now))
    if params:
        conn.executemany(LEDGER_UPSERT, params)
    return len(params)

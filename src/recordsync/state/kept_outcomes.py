"""What a finished run keeps of its journal for ``recordsync history --key``: the outcomes the
ledger cannot tell.

Once a run is finished and folded, the ledger row of each key it sent names the run, the
status and the record id of the key's last acknowledged outcome: ``history --key`` reads
that head from the ledger (:meth:`recordsync.state.history.RunHistory.key_events`). Of the
run's journaled outcomes (one ``chunk_log`` record a chunk) only what the ledger does not
say stays:

    kept     a failure or a hold (with its reason); a ``created`` / ``updated`` outcome the
             ledger row does not repeat (another run, status or record id: the service gave
             no record id, or the key had a later outcome in the same run)
    dropped  ``created`` / ``updated`` outcomes the key's ledger row repeats (this run, the
             same status and record id); ``retry`` rows (a later chunk holds the row's
             outcome); rows without a key (no history is looked up for them)

No input hash is kept (the ledger holds the last one). A chunk left with nothing is deleted;
its count in ``chunks`` stays. A nightly re-run that sends a few rows therefore keeps next
to nothing, and a first run keeps only its failures, instead of an outcome a row sent.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any

from recordsync.state.journal_codec import decode, is_plain, pack
from recordsync.state.journal_records import FINAL_STATUSES
from recordsync.state.ledger_rows import ACKED_SENT, STATUS_CODES
from recordsync.state.store import Head, StateStore

_CHUNKS_AT_A_TIME = 500

_KEY, _STATUS, _RECORD_ID, _ERROR = 1, 3, 4, 5


def keep_untold(conn: sqlite3.Connection, store: StateStore, pipeline: str, run_id: str) -> None:
    """Reduce the kept outcomes of the finished (and folded) run ``run_id`` of ``pipeline``
    (its state key) to what the ledger cannot tell (module docstring), inside the caller's
    transaction, a few hundred chunks at a time."""
    run_no = store.run_number(run_id)
    after: tuple[str, int] = ("", -1)
    while True:
        batch = conn.execute(
            "SELECT l.step, l.chunk_no, coalesce(c.mapping, l.step), l.outcomes"
            " FROM chunk_log l LEFT JOIN chunks c ON c.run_id = l.run_id AND c.step = l.step"
            " AND c.chunk_no = l.chunk_no WHERE l.run_id = ? AND l.outcomes IS NOT NULL"
            " AND (l.step > ? OR (l.step = ? AND l.chunk_no > ?))"
            " ORDER BY l.step, l.chunk_no LIMIT ?",
            (run_id, after[0], after[0], after[1], _CHUNKS_AT_A_TIME),
        ).fetchall()
        if not batch:
            return
        chunks = [(str(s), int(n), str(m), decode(text)) for s, n, m, text in batch]
        heads = _heads(store, pipeline, chunks)
        updates: list[tuple[Any, ...]] = []
        gone: list[tuple[Any, ...]] = []
        for step, chunk_no, mapping, rows in chunks:
            said = heads.get(mapping, {})
            kept = [
                (r[0], r[_KEY], None, *r[_STATUS:])
                for r in rows
                if r[_KEY] is not None
                and r[_STATUS] in FINAL_STATUSES
                and ((head := _head_of(r, run_no)) is None or said.get(r[_KEY]) != head)
            ]
            if kept:
                text = pack(kept)
                updates.append((text, int(is_plain(text)), run_id, step, chunk_no))
            else:
                gone.append((run_id, step, chunk_no))
        conn.executemany(
            "UPDATE chunk_log SET outcomes = ?, plain = ? WHERE run_id = ? AND step = ?"
            " AND chunk_no = ?",
            updates,
        )
        conn.executemany(
            "DELETE FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no = ?", gone
        )
        after = (chunks[-1][0], chunks[-1][1])


def _head_of(row: list[Any], run_no: int) -> tuple[int, int, int] | None:
    """The ledger row (run, status, record id) that would repeat a journaled outcome; None
    for an outcome the ledger never repeats (a failure or hold: its reason; no record id)."""
    if row[_STATUS] not in ACKED_SENT or row[_RECORD_ID] is None or row[_ERROR] is not None:
        return None
    return (run_no, STATUS_CODES[row[_STATUS]], row[_RECORD_ID])


def _heads(
    store: StateStore, pipeline: str, chunks: list[tuple[str, int, str, list[Any]]]
) -> dict[str, dict[str, Head]]:
    """mapping → the ledger rows of the keys these chunks sent (created / updated)."""
    keys: dict[str, set[str]] = defaultdict(set)
    for _step, _no, mapping, rows in chunks:
        keys[mapping].update(
            r[_KEY] for r in rows if r[_KEY] is not None and r[_STATUS] in ACKED_SENT
        )
    out: dict[str, dict[str, Head]] = {}
    for mapping, wanted in keys.items():
        scope = store.scope_id(pipeline, mapping, create=False)
        out[mapping] = {} if scope is None or not wanted else store.heads(scope, sorted(wanted))
    return out

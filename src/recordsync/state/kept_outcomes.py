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

import base64
import sqlite3
import zlib
from collections import defaultdict
from itertools import chain
from typing import Any

import orjson

from recordsync.state.journal_codec import PACKED, decode, is_plain, pack
from recordsync.state.journal_records import FINAL_STATUSES
from recordsync.state.ledger_rows import ACKED_SENT, STATUS_CODES
from recordsync.state.store import StateStore

_CHUNKS_AT_A_TIME = 500

_KEY, _STATUS = 1, 3  # of an outcome: (source row, key, input hash, status, record id, error)

_SENT_CODES = {name: STATUS_CODES[name] for name in ACKED_SENT}

Said = tuple[str, int, int]
"""(key, status code, record id): a sent outcome as the ledger row that repeats it holds it."""

_NOT_REPEATED = (
    "SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'),"
    " json_extract(j.value, '$[2]') FROM json_each(?2) j LEFT JOIN ledger l"
    " ON l.scope_id = ?1 AND l.source_key = json_extract(j.value, '$[0]')"
    " WHERE l.source_key IS NULL OR l.last_run IS NOT ?3"
    " OR l.last_status <> json_extract(j.value, '$[1]')"
    " OR l.record_id IS NOT json_extract(j.value, '$[2]')"
)
"""The outcomes (a JSON array of :data:`Said`) the ledger of scope ?1 does not repeat for run
?3: compared inside SQLite, a key at a time by the primary key; only those come back."""


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
        chunks = [(str(s), int(n), str(m), _rows(text)) for s, n, m, text in batch]
        saids = [_saids(rows) for _s, _n, _m, rows in chunks]
        sent: dict[str, list[Said]] = defaultdict(list)
        for (_step, _no, mapping, _chunk_rows), said in zip(chunks, saids, strict=True):
            sent[mapping].extend(filter(None, said))
        untold = {m: _not_repeated(store, pipeline, m, run_no, said) for m, said in sent.items()}
        updates: list[tuple[Any, ...]] = []
        gone: list[tuple[Any, ...]] = []
        for (step, chunk_no, mapping, rows), said in zip(chunks, saids, strict=True):
            told = untold.get(mapping, set())
            kept = [
                (r[0], r[_KEY], None, *r[_STATUS:])
                for r, s in zip(rows, said, strict=True)
                if r[_KEY] is not None and r[_STATUS] in FINAL_STATUSES and (s is None or s in told)
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


def _rows(text: str) -> list[list[Any]]:
    """A chunk's outcomes (:func:`.journal_codec.decode`; orjson where it reads them alike:
    about twice as fast)."""
    if text.startswith(PACKED):
        try:
            rows: list[list[Any]] = orjson.loads(zlib.decompress(base64.b64decode(text[1:])))
        except orjson.JSONDecodeError:  # a lone surrogate
            return decode(text)
        if float in set(map(type, chain.from_iterable(rows))):
            return decode(text)  # an integer beyond 64 bits, read as a float: as json reads it
        return rows
    return decode(text)


def _saids(rows: list[list[Any]]) -> list[Said | None]:
    """Per outcome, the ledger row (key, status, record id) that would repeat it; None for an
    outcome the ledger never repeats (no key; a failure or hold: its reason; no record id)."""
    get = _SENT_CODES.get
    return [
        (key, code, rid)
        if (code := get(status)) is not None
        and key is not None
        and rid is not None
        and error is None
        else None
        for _sr, key, _hash, status, rid, error in rows
    ]


def _not_repeated(
    store: StateStore, pipeline: str, mapping: str, run_no: int, said: list[Said]
) -> set[Said]:
    """Of ``said``, what the ledger of ``mapping`` does not repeat for run ``run_no``."""
    scope = store.scope_id(pipeline, mapping, create=False)
    if scope is None or not said:
        return set(said)
    keys = [s[0] for s in said]
    if store.json_functions and "\x00" not in "".join(keys):
        try:
            text = orjson.dumps(said).decode()
        except orjson.JSONEncodeError:  # a lone surrogate, an integer beyond 64 bits
            text = None
        if text is not None:
            rows = store.connection.execute(_NOT_REPEATED, (scope, text, run_no)).fetchall()
            return {(str(k), int(c), r) for k, c, r in rows}
    heads = store.heads(scope, sorted(set(keys)))
    return {s for s in said if heads.get(s[0]) != (run_no, s[1], s[2])}

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

Comparing each outcome with the ledger costs a decoding of every chunk and a lookup a row.
A mapping whose outcomes this process journaled itself (a :class:`RunTally` of each chunk
it stored) skips both when no key has two final outcomes in the run and none was marked
deleted since: then each sent outcome with a record id is its key's ledger row, and only
the chunks that hold something else (a failure, a hold, an outcome without a record id or
with an error) are read. That is so when the ledger rows of the mapping that carry the
run's number and are not ``deleted`` are as many as the keyed final outcomes the tally
counted (:meth:`RunTally.told`): only the run's own outcomes write its number with another
status (a mirror delete writes ``deleted``), and each key with an outcome holds one such
row, unless marked deleted since; so the count equals the outcomes only if every key has
one outcome and holds its row still.
"""

from __future__ import annotations

import base64
import sqlite3
import zlib
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain, groupby
from typing import Any

import orjson

from recordsync.state.journal_codec import PACKED, decode, is_plain, pack
from recordsync.state.journal_columns import RowMarks, fourth, second, third
from recordsync.state.journal_records import FINAL_STATUSES, ChunkResult
from recordsync.state.ledger_rows import ACKED_SENT, DELETED, STATUS_CODES
from recordsync.state.store import StateStore

_CHUNKS_AT_A_TIME = 500

_KEY, _STATUS = 1, 3  # of an outcome: (source row, key, input hash, status, record id, error)

_SENT_CODES = {name: STATUS_CODES[name] for name in ACKED_SENT}

_SCAN_PER_OUTCOME = 4
"""Ledger rows :meth:`RunTally.told` reads at most per outcome it counted (and
:data:`_SCAN_SLACK` more): a few tenths of a microsecond a row against a few microseconds an
outcome compared; a mapping whose ledger is larger is compared outcome by outcome."""
_SCAN_SLACK = 1000

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

_RUN_ROWS = (
    "SELECT count(*), coalesce(sum(CASE WHEN last_run = ? AND last_status <> ? THEN 1 ELSE 0"
    " END), 0) FROM (SELECT last_run, last_status FROM ledger WHERE scope_id = ? LIMIT ?) t"
)
"""(ledger rows read, of them those of the run that are not deleted), of at most ? rows of a
scope."""

_CHUNKS = (
    "SELECT l.step, l.chunk_no, coalesce(c.mapping, l.step) FROM chunk_log l LEFT JOIN chunks c"
    " ON c.run_id = l.run_id AND c.step = l.step AND c.chunk_no = l.chunk_no"
    " WHERE l.run_id = ? AND l.outcomes IS NOT NULL ORDER BY l.step, l.chunk_no"
)


class RunTally:
    """What a journal stored of one run's outcomes, counted as it stored them (a few bits a
    chunk): for each mapping, its keyed final outcomes; for each step, the chunks stored and
    those holding an outcome the ledger may not repeat. Counts only grow: an acknowledgement
    rolled back and made again counts twice, which only makes :meth:`told` say no."""

    __slots__ = ("_dirty", "_finals", "_stored")

    def __init__(self) -> None:
        self._finals: dict[str, int] = {}
        """mapping → outcomes stored with a key and a final status."""
        self._stored: dict[str, RowMarks] = {}
        """step → the chunks whose outcomes were stored."""
        self._dirty: dict[str, RowMarks] = {}
        """step → the chunks with an outcome other than ``created`` / ``updated`` with a
        record id and no error (and a few more: a chunk read needlessly costs only time)."""

    def add(
        self,
        step: str,
        chunk_no: int,
        mapping: str,
        outcomes: Sequence[ChunkResult],
        keys: Sequence[str | None],
    ) -> None:
        """Count a chunk's stored outcomes (``keys``: the rows', in the order of ``outcomes``)."""
        statuses = set(map(str, map(second, outcomes)))
        if None not in keys and statuses <= FINAL_STATUSES:
            finals = len(keys)
        else:
            finals = sum(
                k is not None and str(o[1]) in FINAL_STATUSES
                for o, k in zip(outcomes, keys, strict=True)
            )
        self._finals[mapping] = self._finals.get(mapping, 0) + finals
        _marks(self._stored, step).update((chunk_no,))
        if not (
            statuses <= ACKED_SENT
            and None not in map(third, outcomes)
            and set(map(fourth, outcomes)) <= {None}
        ):
            _marks(self._dirty, step).update((chunk_no,))

    def told(
        self,
        store: StateStore,
        pipeline: str,
        run_no: int,
        chunks: Sequence[tuple[str, int, str]],
    ) -> set[str]:
        """The mappings of ``chunks`` (every chunk of the run with outcomes: step, number,
        mapping) whose sent outcomes with a record id are each their key's ledger row: every
        chunk of the mapping counted here, and the mapping's ledger rows of run ``run_no``
        not marked deleted as many as its keyed final outcomes (module docstring)."""
        mappings = {m for _s, _n, m in chunks}
        for step, chunk_no, mapping in chunks:
            stored = self._stored.get(step)
            if stored is None or chunk_no not in stored:
                mappings.discard(mapping)  # journaled by another attempt or writer
        told: set[str] = set()
        for mapping in sorted(mappings):
            finals = self._finals.get(mapping, 0)
            scope = store.scope_id(pipeline, mapping, create=False)
            if scope is None:
                if finals == 0:
                    told.add(mapping)
                continue
            limit = finals * _SCAN_PER_OUTCOME + _SCAN_SLACK
            read, of_run = store.connection.execute(
                _RUN_ROWS, (run_no, STATUS_CODES[DELETED], scope, limit)
            ).fetchone()
            if int(read) < limit and int(of_run) == finals:
                told.add(mapping)
        return told

    def dirty(self, step: str, chunk_no: int) -> bool:
        """Whether the chunk may hold an outcome the ledger does not repeat."""
        marks = self._dirty.get(step)
        return marks is not None and chunk_no in marks


def _marks(marks: dict[str, RowMarks], step: str) -> RowMarks:
    found = marks.get(step)
    if found is None:
        found = marks[step] = RowMarks()
    return found


def keep_untold(
    conn: sqlite3.Connection,
    store: StateStore,
    pipeline: str,
    run_id: str,
    tally: RunTally | None = None,
) -> int:
    """Reduce the kept outcomes of the finished (and folded) run ``run_id`` of ``pipeline``
    (its state key) to what the ledger cannot tell (module docstring), inside the caller's
    transaction, a few hundred chunks at a time. ``tally``: what this process stored of the
    run, if it stored it. Returns the number of chunks decided from the tally."""
    run_no = store.run_number(run_id)
    told: set[str] = set()
    fast = 0
    if tally is not None:
        chunks = [(str(s), int(n), str(m)) for s, n, m in conn.execute(_CHUNKS, (run_id,))]
        told = tally.told(store, pipeline, run_no, chunks)
        mine = [(s, n) for s, n, m in chunks if m in told]
        _keep_told(conn, run_id, tally, mine)
        fast = len(mine)
    _keep_compared(conn, store, pipeline, run_id, run_no, told)
    return fast


def _keep_told(
    conn: sqlite3.Connection, run_id: str, tally: RunTally, chunks: list[tuple[str, int]]
) -> None:
    """The chunks of mappings :meth:`RunTally.told` vouched for (in step and chunk order):
    those without a failure, hold or odd outcome go whole; the others keep what is neither a
    sent outcome with a record id nor without a key, without reading the ledger."""
    gone: list[tuple[Any, ...]] = []
    dirty: list[tuple[str, int]] = []
    for step, group in groupby(chunks, key=lambda c: c[0]):
        clean: list[tuple[str, int]] = []
        for _step, chunk_no in group:
            (dirty if tally.dirty(step, chunk_no) else clean).append((step, chunk_no))
        for _run, numbers in groupby(enumerate(n for _s, n in clean), lambda p: p[1] - p[0]):
            span = [n for _i, n in numbers]
            gone.append((run_id, step, span[0], span[-1]))
    conn.executemany(
        "DELETE FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no BETWEEN ? AND ?"
        " AND outcomes IS NOT NULL",
        gone,
    )
    for at in range(0, len(dirty), _CHUNKS_AT_A_TIME):
        part = dirty[at : at + _CHUNKS_AT_A_TIME]
        read = []
        for step, chunk_no in part:
            (text,) = conn.execute(
                "SELECT outcomes FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no = ?",
                (run_id, step, chunk_no),
            ).fetchone()
            rows = _rows(text)
            read.append((step, chunk_no, rows, _saids(rows)))
        _write_kept(conn, run_id, read, {})


def _keep_compared(
    conn: sqlite3.Connection,
    store: StateStore,
    pipeline: str,
    run_id: str,
    run_no: int,
    told: set[str],
) -> None:
    """The chunks of the mappings not in ``told``: each sent outcome compared with the ledger."""
    after: tuple[str, int] = ("", -1)
    skip = sorted(told)
    not_told = f" AND coalesce(c.mapping, l.step) NOT IN ({','.join('?' * len(skip))})"
    while True:
        batch = conn.execute(
            "SELECT l.step, l.chunk_no, coalesce(c.mapping, l.step), l.outcomes"
            " FROM chunk_log l LEFT JOIN chunks c ON c.run_id = l.run_id AND c.step = l.step"
            " AND c.chunk_no = l.chunk_no WHERE l.run_id = ? AND l.outcomes IS NOT NULL"
            " AND (l.step > ? OR (l.step = ? AND l.chunk_no > ?))"
            + (not_told if skip else "")
            + " ORDER BY l.step, l.chunk_no LIMIT ?",
            (run_id, after[0], after[0], after[1], *skip, _CHUNKS_AT_A_TIME),
        ).fetchall()
        if not batch:
            return
        chunks = [(str(s), int(n), str(m), _rows(text)) for s, n, m, text in batch]
        saids = [_saids(rows) for _s, _n, _m, rows in chunks]
        sent: dict[str, list[Said]] = defaultdict(list)
        for (_step, _no, mapping, _chunk_rows), said in zip(chunks, saids, strict=True):
            sent[mapping].extend(filter(None, said))
        untold = {m: _not_repeated(store, pipeline, m, run_no, said) for m, said in sent.items()}
        _write_kept(
            conn,
            run_id,
            [(s, n, rows, said) for (s, n, _m, rows), said in zip(chunks, saids, strict=True)],
            {(s, n): untold.get(m, set()) for s, n, m, _rows in chunks},
        )
        after = (chunks[-1][0], chunks[-1][1])


def _write_kept(
    conn: sqlite3.Connection,
    run_id: str,
    chunks: list[tuple[str, int, list[list[Any]], list[Said | None]]],
    untold: dict[tuple[str, int], set[Said]],
) -> None:
    """Each chunk's outcomes reduced to the keyed final ones the ledger cannot tell: without
    a :data:`Said`, or with one in the chunk's ``untold`` (none when absent); a chunk left
    with nothing deleted."""
    updates: list[tuple[Any, ...]] = []
    gone: list[tuple[Any, ...]] = []
    for step, chunk_no, rows, said in chunks:
        told = untold.get((step, chunk_no), set())
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
    conn.executemany("DELETE FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no = ?", gone)


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

"""Folding a run's acknowledged outcomes into the identity ledger, in bulk (docs/state.md):
what a :class:`recordsync.state.journal.Journal` with ``defer_ledger`` keeps of each
acknowledgement (the ledger rows, so that a fold does not read back what was just written),
written sorted by key a slice at a time or all at once, or read back from the journal (a
resumed run; chunks acknowledged out of order) with the same rules and order; and, should
the transaction that writes them not commit, what was kept as it was before it."""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

from recordsync.state.journal_codec import decode
from recordsync.state.journal_records import FINAL_STATUSES, ChunkResult
from recordsync.state.ledger_rows import (
    ACKED_FAILED,
    ACKED_SENT,
    LEDGER_ON_CONFLICT,
    STATUS_CODES,
    pack_hash,
    pack_hashes,
    upsert_ledger,
    write_acknowledged,
)
from recordsync.state.store import StateStore

_STATUS_CODE = " ".join(f"WHEN '{name}' THEN {code}" for name, code in STATUS_CODES.items())

_FOLD = (
    "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
    " last_run)"
    " SELECT ?1, key, CASE WHEN status IN ('created', 'updated') THEN record_id END,"
    " CASE WHEN status IN ('created', 'updated') THEN rs_pack_hash(input_hash) END,"
    f" CASE status {_STATUS_CODE} END, ?6"
    " FROM (SELECT l.chunk_no, json_extract(j.value, '$[0]') AS source_row,"
    " json_extract(j.value, '$[1]') AS key, json_extract(j.value, '$[2]') AS input_hash,"
    " json_extract(j.value, '$[3]') AS status, json_extract(j.value, '$[4]') AS record_id"
    " FROM chunk_log l, json_each(l.outcomes) j WHERE l.run_id = ?2 AND l.step = ?3"
    " AND l.chunk_no BETWEEN ?4 AND ?5 AND l.outcomes IS NOT NULL)"
    " WHERE key IS NOT NULL AND status IN ('created', 'updated', 'failed', 'in_doubt')"
    " ORDER BY key, chunk_no, source_row" + LEDGER_ON_CONFLICT
)


"""The ledger update rules of :func:`write_acknowledged`, from the journal in bulk: in key
order (neighbouring keys share pages) and, for a key journaled twice, in journal order. Read
with SQLite's JSON functions; a range with a chunk that is not ``plain`` (a key or hash with
a NUL character, where SQLite's JSON strings end) and an SQLite built without them take
:meth:`LedgerFold._fold_in_python`, with the same rules and order."""


_fold_order = itemgetter(0, 1, 2)


"""Ledger rows read back from the journal, (key, chunk, source row, ...), in journal order:
by key, then chunk, then source row (a key journaled twice ends with its last outcome)."""


_by_key = itemgetter(1)


_by_row = itemgetter(0)


_status, _record_id = itemgetter(1), itemgetter(2)


_row_pair = itemgetter(0, slice(1, 3))


"""A :class:`ChunkResult`'s status and record id."""


ToFold = list[tuple[int, str, int | None, bytes | None, int, int]]


"""Ledger upserts (:data:`recordsync.state.ledger_rows.LEDGER_UPSERT` parameters, as stored)
kept from the acknowledgements, in journal order."""


_Key = tuple[str, str, str]


"""(run, step, mapping)"""


@dataclass(slots=True)
class _Sorted:
    """Kept ledger rows of chunks acknowledged in order, sorted by key, being written a slice
    at a time (:meth:`LedgerFold.slice`)."""

    key: _Key
    rows: ToFold
    done: int = 0


Journaled = dict[int, tuple[str | None, str | None]]


Aligned = tuple[list[str | None], list[str | None]]
"""The source keys and input hashes of a chunk's rows, in the order of its results."""


class LedgerFold:
    """The ledger rows a journal acknowledged and has not written yet, and their writing
    (the pipeline lock makes its journal the ledger's only writer)."""

    def __init__(
        self, store: StateStore, pipeline: str, slices: tuple[int, int] | None = None
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self._unfolded: dict[_Key, tuple[int, int]] = {}
        """(run, step, mapping) → (first, last): the chunks to fold, acknowledged and not
        folded (after an acknowledgement out of chunk order, the later chunks again too)."""
        self._to_fold: dict[_Key, tuple[ToFold, bool]] = {}
        """(run, step, mapping) → the ledger rows of those chunks, kept from the
        acknowledgements, and whether they were acknowledged in chunk order."""
        self._high: dict[_Key, int] = {}
        """(run, step, mapping) → the highest chunk number acknowledged, folded or not."""
        self._sorted: deque[_Sorted] = deque()
        """Earlier acknowledgements' rows, sorted, partly written: written before the rest."""
        self.slices = slices
        """``(start_at, rows)``: write the ledger a slice of ``rows`` rows with each
        acknowledgement, from key-sorted batches of everything kept once ``start_at`` rows
        wait (:meth:`slice`); None: only :meth:`fold` writes the ledger."""
        self.unfolded_rows = 0
        """Ledger rows acknowledged and not yet written (kept, or sorted and not written)."""

    @property
    def pending(self) -> bool:
        """Whether anything acknowledged waits to be written."""
        return bool(self._unfolded or self._sorted)

    def keep(
        self,
        run_id: str,
        step: str,
        mapping: str,
        chunk_no: int,
        outcomes: Sequence[ChunkResult],
        aligned: Aligned,
    ) -> None:
        """Keep an acknowledged chunk's ledger rows, ready to fold (``aligned``: the rows'
        keys and hashes, in the order of ``outcomes``)."""
        key = (run_id, step, mapping)
        high = self._high.get(key, 0)
        first, last = self._unfolded.get(key, (chunk_no, chunk_no - 1))
        # acknowledged after a later chunk (folded or not): from the journal, in journal
        # order, this chunk and every later one (folding them again is idempotent)
        self._unfolded[key] = (min(first, chunk_no), max(last, high, chunk_no))
        self._high[key] = max(high, chunk_no)
        rows, in_order = self._to_fold.get(key, ([], True))
        before = len(rows)
        scope = self.store.scope_id(self.pipeline, mapping)
        assert scope is not None
        run_no = self.store.run_number(run_id)
        keys, hashes = aligned
        ordered: Sequence[ChunkResult] = outcomes
        numbers = list(map(_by_row, outcomes))
        if numbers != sorted(numbers):  # source-row order within the chunk
            at = sorted(range(len(numbers)), key=numbers.__getitem__)
            ordered = list(map(outcomes.__getitem__, at))
            keys, hashes = list(map(keys.__getitem__, at)), list(map(hashes.__getitem__, at))
        statuses = list(map(str, map(_status, ordered)))
        if None not in keys and set(statuses) <= ACKED_SENT:
            # every row keyed and sent (the common chunk): the same tuples, built in C
            rows.extend(
                zip(
                    repeat(scope),
                    keys,
                    map(_record_id, ordered),
                    pack_hashes(hashes),
                    map(STATUS_CODES.__getitem__, statuses),
                    repeat(run_no),
                )
            )
        else:
            for o, k, h, status in zip(ordered, keys, hashes, statuses, strict=True):
                if k is None:
                    continue
                if status in ACKED_SENT:
                    code = STATUS_CODES[status]
                    rows.append((scope, k, o.record_id, pack_hash(h), code, run_no))
                elif status in ACKED_FAILED:
                    rows.append((scope, k, None, None, STATUS_CODES[status], run_no))
        self.unfolded_rows += len(rows) - before
        self._to_fold[key] = (rows, in_order and chunk_no > high)

    def slice(self, conn: sqlite3.Connection) -> int:
        """With :attr:`slices` set, in an acknowledgement's transaction: write the next slice
        of the oldest sorted batch; first sort everything kept (acknowledged in order) into
        new batches if none is left and enough rows wait. Key-sorted batches written in
        slices dirty the same ledger pages as one bulk write of the batch: each slice is a
        key range. Returns the number of rows written."""
        if self.slices is None:
            return 0
        start_at, size = self.slices
        if not self._sorted and self.unfolded_rows >= start_at:
            for key, (rows, in_order) in list(self._to_fold.items()):
                if in_order:  # else folded from the journal by fold()
                    # stable: journal order within a key; a copy, so that a rollback of this
                    # transaction can take the acknowledgement's rows off the kept list
                    self._sorted.append(_Sorted(key, sorted(rows, key=_by_key)))
                    del self._to_fold[key], self._unfolded[key]
        if not self._sorted:
            return 0
        batch = self._sorted[0]
        part = batch.rows[batch.done : batch.done + size]
        upsert_ledger(conn, part, many=not self.store.is_postgres)
        batch.done += len(part)
        self.unfolded_rows -= len(part)
        if batch.done >= len(batch.rows):
            self._sorted.popleft()
        return len(part)

    @contextmanager
    def restored_on_failure(self) -> Iterator[None]:
        """If a transaction that acknowledges or folds does not commit, what was kept to fold
        is as before it: rows kept since are dropped again, rows written are kept again."""
        unfolded, count, high = dict(self._unfolded), self.unfolded_rows, dict(self._high)
        held = {k: (rows, in_order, len(rows)) for k, (rows, in_order) in self._to_fold.items()}
        batches = [(b, b.done) for b in self._sorted]
        try:
            yield
        except BaseException:
            self._unfolded, self.unfolded_rows, self._high = unfolded, count, high
            for rows, _, n in held.values():
                del rows[n:]  # appended to in place; a fold sorts them in place (harmless)
            self._to_fold = {k: (rows, in_order) for k, (rows, in_order, _) in held.items()}
            self._sorted = deque(b for b, _ in batches)
            for b, done in batches:
                b.done = done
            raise

    def fold(self, conn: sqlite3.Connection, run_id: str | None = None) -> int:
        """Fold what this object acknowledged and deferred, from the rows it kept (the same
        rows, order and rules as :meth:`fold_range` reading the journal back)."""
        folded = 0
        later: deque[_Sorted] = deque()
        for batch in self._sorted:  # acknowledged before what is kept below: first
            if run_id is None or batch.key[0] == run_id:
                upsert_ledger(conn, batch.rows[batch.done :], many=not self.store.is_postgres)
                folded += len(batch.rows) - batch.done
                batch.done = len(batch.rows)
            else:
                later.append(batch)
        self._sorted = later
        pending = [k for k in self._unfolded if run_id is None or k[0] == run_id]
        for key in pending:
            rows, in_order = self._to_fold.get(key, ([], False))
            if not in_order:  # acknowledged out of chunk order (or not kept): as on resume
                first, last = self._unfolded[key]
                folded += self.fold_range(conn, *key, first, last)
                continue
            # chunks acknowledged in order, rows in order within each: a stable sort on the
            # key alone gives the journal's (key, chunk, source row) order
            rows.sort(key=_by_key)
            upsert_ledger(conn, rows, many=not self.store.is_postgres)
            folded += len(rows)
        for key in pending:
            del self._unfolded[key]
            self._to_fold.pop(key, None)
        self.unfolded_rows = sum(len(r) for r, _ in self._to_fold.values()) + sum(
            len(b.rows) - b.done for b in self._sorted
        )
        return folded

    def fold_range(
        self, conn: sqlite3.Connection, run_id: str, step: str, mapping: str, first: int, last: int
    ) -> int:
        scope = self.store.scope_id(self.pipeline, mapping)
        assert scope is not None
        odd = conn.execute(
            "SELECT 1 FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no BETWEEN ? AND ?"
            " AND plain = 0 LIMIT 1",
            (run_id, step, first, last),
        ).fetchone()
        if odd is None and self.store.json_functions:
            params = (scope, run_id, step, first, last, self.store.run_number(run_id))
            return int(conn.execute(_FOLD, params).rowcount)
        return self._fold_in_python(conn, scope, run_id, step, first, last)

    def _fold_in_python(
        self, conn: sqlite3.Connection, scope: int, run_id: str, step: str, first: int, last: int
    ) -> int:
        """:data:`_FOLD` without SQLite's JSON functions: the same rows in the same order."""
        rows: list[tuple[str, int, int, int | None, str | None, str]] = []
        cur = conn.execute(
            "SELECT chunk_no, outcomes FROM chunk_log WHERE run_id = ? AND step = ?"
            " AND chunk_no BETWEEN ? AND ? AND outcomes IS NOT NULL",
            (run_id, step, first, last),
        )
        for chunk_no, text in cur.fetchall():
            for sr, key, input_hash, status, rid, _error in decode(text):
                if key is not None and status in FINAL_STATUSES:
                    rows.append((key, chunk_no, sr, rid, input_hash, status))
        rows.sort(key=_fold_order)
        run_no = self.store.run_number(run_id)
        return write_acknowledged(conn, scope, run_no, ((r[0], r[3], r[4], r[5]) for r in rows))

    def fold_run(self, conn: sqlite3.Connection, run_id: str) -> int:
        """Fold every acknowledged outcome of ``run_id`` into the ledger again, from the
        journal (idempotent: the same values, in chunk order), in the caller's transaction."""
        ranges = conn.execute(
            "SELECT step, mapping, min(chunk_no), max(chunk_no) FROM chunks"
            " WHERE run_id = ? AND state = 'acked' GROUP BY step, mapping",
            (run_id,),
        ).fetchall()
        return sum(self.fold_range(conn, run_id, *r) for r in ranges)

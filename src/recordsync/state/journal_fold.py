"""Folding the ledger from the journal (:class:`LedgerFold`, a base of
:class:`recordsync.state.journal.Journal`): the acknowledged outcomes reach the ledger in
key-sorted bulk writes (docs/state.md, "Crash-safe resume"), from the rows kept at
acknowledgement or, for a resumed run, read back from the journal."""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

from recordsync.state.journal_read import FINAL_STATUSES, ChunkResult, JournalReader
from recordsync.state.ledger_rows import (
    ACKED_FAILED,
    ACKED_SENT,
    LEDGER_ON_CONFLICT,
    LEDGER_UPSERT,
    utc_now,
    write_acknowledged,
)
from recordsync.state.store import StateStore

_FOLD = (
    "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
    " last_run_id, updated_at)"
    " SELECT ?1, key, CASE WHEN status IN ('created', 'updated') THEN record_id END,"
    " CASE WHEN status IN ('created', 'updated') THEN input_hash END, status, ?3, ?2"
    " FROM (SELECT l.chunk_no, json_extract(j.value, '$[0]') AS source_row,"
    " json_extract(j.value, '$[1]') AS key, json_extract(j.value, '$[2]') AS input_hash,"
    " json_extract(j.value, '$[3]') AS status, json_extract(j.value, '$[4]') AS record_id"
    " FROM chunk_log l, json_each(l.outcomes) j WHERE l.run_id = ?3 AND l.step = ?4"
    " AND l.chunk_no BETWEEN ?5 AND ?6 AND l.outcomes IS NOT NULL)"
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
"""A :class:`ChunkResult`'s status and record id."""

ToFold = list[tuple[int, str, int | None, str | None, str, str, str]]
"""Ledger upserts (:data:`recordsync.state.ledger_rows.LEDGER_UPSERT` parameters) kept from the
acknowledgements, in journal order."""
_Key = tuple[str, str, str]
"""(run, step, mapping)"""


@dataclass(slots=True)
class _Sorted:
    """Kept ledger rows of chunks acknowledged in order, sorted by key, being written a slice
    at a time (:meth:`LedgerFold._slice`)."""

    key: _Key
    rows: ToFold
    done: int = 0


class LedgerFold(JournalReader):
    """The ledger side of the journal: what was acknowledged with ``defer_ledger`` and not
    yet written to the ledger, and the writing."""

    def __init__(self, store: StateStore, pipeline: str) -> None:
        super().__init__(store, pipeline)
        self._unfolded: dict[_Key, tuple[int, int]] = {}
        """(run, step, mapping) → (first, last): the chunks to fold, acknowledged and not
        folded (after an acknowledgement out of chunk order, the later chunks again too)."""
        self._to_fold: dict[_Key, tuple[ToFold, bool]] = {}
        """(run, step, mapping) → the ledger rows of those chunks, kept from the
        acknowledgements (so a fold does not read back what was just written), and whether
        they were acknowledged in chunk order."""
        self._high: dict[_Key, int] = {}
        """(run, step, mapping) → the highest chunk number acknowledged, folded or not."""
        self._sorted: deque[_Sorted] = deque()
        """Earlier acknowledgements' rows, sorted, partly written: written before the rest."""
        self.slices: tuple[int, int] | None = None
        """``(start_at, rows)``: write the ledger a slice of ``rows`` rows with each
        acknowledgement, from key-sorted batches of everything kept once ``start_at`` rows
        wait (:meth:`_slice`); None: only :meth:`fold` writes the ledger."""
        self.unfolded_rows = 0
        """Ledger rows acknowledged and not yet written (kept, or sorted and not written)."""
        self._guarded = False
        """In a :meth:`transaction` of this object (a failure restores what was kept)."""

    def _keep_to_fold(
        self,
        run_id: str,
        step: str,
        mapping: str,
        chunk_no: int,
        outcomes: Sequence[ChunkResult],
        journaled: dict[int, tuple[str | None, str | None]],
    ) -> None:
        """Keep an acknowledged chunk's ledger rows, ready to fold."""
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
        now = utc_now()  # the ledger's updated_at: when the outcome was acknowledged
        ordered = sorted(outcomes, key=_by_row)  # source-row order within the chunk
        pairs = list(map(journaled.__getitem__, map(_by_row, ordered)))  # (key, input hash)
        statuses = list(map(str, map(_status, ordered)))
        if None not in map(_by_row, pairs) and set(statuses) <= ACKED_SENT:
            # every row keyed and sent (the common chunk): the same tuples, built in C
            rows.extend(
                zip(
                    repeat(scope),
                    map(_by_row, pairs),
                    map(_record_id, ordered),
                    map(_by_key, pairs),
                    statuses,
                    repeat(run_id),
                    repeat(now),
                )
            )
        else:
            for o, (k, h), status in zip(ordered, pairs, statuses, strict=True):
                if k is None:
                    continue
                if status in ACKED_SENT:
                    rows.append((scope, k, o.record_id, h, status, run_id, now))
                elif status in ACKED_FAILED:
                    rows.append((scope, k, None, None, status, run_id, now))
        self.unfolded_rows += len(rows) - before
        self._to_fold[key] = (rows, in_order and chunk_no > high)

    def _slice(self, conn: sqlite3.Connection) -> int:
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
        conn.executemany(LEDGER_UPSERT, part)
        batch.done += len(part)
        self.unfolded_rows -= len(part)
        if batch.done >= len(batch.rows):
            self._sorted.popleft()
        return len(part)

    # -- the ledger from the journal ------------------------------------------------------
    def fold(self) -> int:
        """Write the outcomes that :meth:`ack_chunk` deferred (``defer_ledger``) to the
        ledger, in one transaction (or the caller's). Returns the number of rows folded."""
        if not self._unfolded and not self._sorted:
            return 0
        with self._restored_on_failure(), self.store.transaction() as conn:
            return self._fold(conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (nested use joins the outer one) after which, if it does not
        commit, what was kept to fold is as before it (:meth:`_restored_on_failure`): the
        acknowledgements made in it write their slice of the ledger (:meth:`_slice`)."""
        if self._conn.in_transaction:
            yield self._conn
            return
        with self._restored_on_failure(), self.store.transaction() as conn:
            self._guarded = True
            try:
                yield conn
            finally:
                self._guarded = False

    @contextmanager
    def _restored_on_failure(self) -> Iterator[None]:
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

    def _fold(self, conn: sqlite3.Connection, run_id: str | None = None) -> int:
        """Fold what this object acknowledged and deferred, from the rows it kept (the same
        rows, order and rules as :meth:`_fold_range` reading the journal back)."""
        folded = 0
        later: deque[_Sorted] = deque()
        for batch in self._sorted:  # acknowledged before what is kept below: first
            if run_id is None or batch.key[0] == run_id:
                conn.executemany(LEDGER_UPSERT, batch.rows[batch.done :])
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
                folded += self._fold_range(conn, *key, first, last)
                continue
            # chunks acknowledged in order, rows in order within each: a stable sort on the
            # key alone gives the journal's (key, chunk, source row) order
            rows.sort(key=_by_key)
            conn.executemany(LEDGER_UPSERT, rows)
            folded += len(rows)
        for key in pending:
            del self._unfolded[key]
            self._to_fold.pop(key, None)
        self.unfolded_rows = sum(len(r) for r, _ in self._to_fold.values()) + sum(
            len(b.rows) - b.done for b in self._sorted
        )
        return folded

    def _fold_range(
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
            return int(conn.execute(_FOLD, (scope, utc_now(), run_id, step, first, last)).rowcount)
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
            for sr, key, input_hash, status, rid, _error in json.loads(text):
                if key is not None and status in FINAL_STATUSES:
                    rows.append((key, chunk_no, sr, rid, input_hash, status))
        rows.sort(key=_fold_order)
        return write_acknowledged(conn, scope, run_id, ((r[0], r[3], r[4], r[5]) for r in rows))

    def fold_run(self, run_id: str) -> int:
        """Fold every acknowledged outcome of ``run_id`` into the ledger again (idempotent:
        the same values, in chunk order). A resumed run calls it for what the attempt that
        died acknowledged but may not have folded."""
        with self.store.transaction() as conn:
            ranges = conn.execute(
                "SELECT step, mapping, min(chunk_no), max(chunk_no) FROM chunks"
                " WHERE run_id = ? AND state = 'acked' GROUP BY step, mapping",
                (run_id,),
            ).fetchall()
            return sum(self._fold_range(conn, run_id, *r) for r in ranges)

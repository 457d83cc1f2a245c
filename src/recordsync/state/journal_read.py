"""Reading the chunk journal back: run records, chunks in flight, journaled outcomes.

The types shared by the journal's reader and writer live here too (see
:mod:`recordsync.state.journal` for how a run writes the journal and resumes).
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from recordsync.state.store import StateStore

if TYPE_CHECKING:
    from recordsync.state.journal_content import JournaledRows

FINAL_STATUSES = frozenset({"created", "updated", "failed", "in_doubt"})
PENDING = "pending"
RETRY = "retry"
QUEUED = "queued"
"""A chunk journaled but not cleared to be sent: its request was never written."""
BEGUN = "begun"
"""A chunk cleared to be sent (or journaled by a writer that sends at once): maybe written."""


class JournalRow(NamedTuple):
    """A row of a chunk about to be sent. ``resend_safe``: resending it cannot create a second
    record (it matches by id, email or name, or dedups on create); decided by the runner."""

    source_row: int
    key: str | None
    input_hash: str | None
    resend_safe: bool = True


class ChunkResult(NamedTuple):
    """The acknowledged outcome of one row of a chunk."""

    source_row: int
    status: str
    record_id: int | None = None
    error: str | None = None


class Outcome(NamedTuple):
    """A journaled row, as read back for the report or for resume."""

    step: str
    chunk_no: int
    source_row: int
    source_key: str | None
    status: str
    record_id: int | None
    error: str | None


class RunInfo(NamedTuple):
    run_id: str
    pipeline: str
    state: str
    started_at: str
    finished_at: str | None
    attempts: int


class PendingChunk(NamedTuple):
    run_id: str
    step: str
    chunk_no: int
    mapping: str
    first_source_row: int | None
    rows: list[JournalRow]
    maybe_written: bool = True
    """False: the chunk was never cleared to be sent (``queued``), so never written."""


class SourceRowSet:
    """A compact sorted set of source row numbers (8 bytes a row) with ``in`` by bisection."""

    def __init__(self, rows: Iterable[int]) -> None:
        self._rows = array("q", sorted(rows))

    @classmethod
    def of_sorted(cls, rows: array[int]) -> SourceRowSet:
        """A set over ``rows``, already sorted (not copied)."""
        made = cls(())
        made._rows = rows
        return made

    def __contains__(self, source_row: object) -> bool:
        if not isinstance(source_row, int):
            return False
        i = bisect_left(self._rows, source_row)
        return i < len(self._rows) and self._rows[i] == source_row

    def __len__(self) -> int:
        return len(self._rows)


class JournalReader:
    """Read access to the run journal of one pipeline."""

    def __init__(self, store: StateStore, pipeline: str) -> None:
        self.store = store
        self.pipeline = pipeline
        self._indexes: dict[tuple[str, str], tuple[array[int], array[int]]] = {}
        """(run, step) → :meth:`_done_index`, for :meth:`outcomes_for` (one step's)."""

    @property
    def _conn(self) -> sqlite3.Connection:
        return self.store.connection

    # -- runs ------------------------------------------------------------------------
    def run(self, run_id: str) -> RunInfo | None:
        row = self._conn.execute(
            "SELECT run_id, pipeline, state, started_at, finished_at, attempts FROM runs"
            " WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        return None if row is None else RunInfo._make(row)

    def last_incomplete_run(self) -> RunInfo | None:
        """The newest run of this pipeline still marked ``running`` (its process died)."""
        row = self._conn.execute(
            "SELECT run_id, pipeline, state, started_at, finished_at, attempts FROM runs"
            " WHERE pipeline = ? AND state = 'running' ORDER BY started_at DESC LIMIT 1",
            (self.pipeline,),
        ).fetchone()
        return None if row is None else RunInfo._make(row)

    def last_run(self) -> RunInfo | None:
        row = self._conn.execute(
            "SELECT run_id, pipeline, state, started_at, finished_at, attempts FROM runs"
            " WHERE pipeline = ? ORDER BY started_at DESC LIMIT 1",
            (self.pipeline,),
        ).fetchone()
        return None if row is None else RunInfo._make(row)

    # -- chunks ----------------------------------------------------------------------
    def pending_chunks(self, run_id: str | None = None) -> list[PendingChunk]:
        """Chunks begun and never acknowledged, of ``run_id`` or of every run of the
        pipeline still marked running."""
        sql = (
            "SELECT c.run_id, c.step, c.chunk_no, c.mapping, c.first_source_row, l.rows, c.state"
            " FROM chunks c JOIN runs r ON r.run_id = c.run_id"
            " JOIN chunk_log l ON l.run_id = c.run_id AND l.step = c.step"
            " AND l.chunk_no = c.chunk_no WHERE r.pipeline = ? AND c.state IN ('begun', 'queued')"
        )
        params: tuple[object, ...] = (self.pipeline,)
        if run_id is not None:
            sql += " AND c.run_id = ?"
            params += (run_id,)
        else:
            sql += " AND r.state = 'running'"
        chunks = self._conn.execute(sql + " ORDER BY c.run_id, c.step, c.chunk_no", params)
        out: list[PendingChunk] = []
        for run, step, chunk_no, mapping, first, text, state in chunks.fetchall():
            rows = sorted(JournalRow(r[0], r[1], r[2], bool(r[3])) for r in json.loads(text))
            out.append(PendingChunk(run, step, chunk_no, mapping, first, rows, state != QUEUED))
        return out

    # -- reading back ----------------------------------------------------------------
    def _journaled(
        self, run_id: str, step: str | None = None, chunks: Iterable[int] | None = None
    ) -> Iterator[Outcome]:
        """Every row of the acknowledged and settled chunks of ``run_id`` (of ``step``; of
        the chunks numbered ``chunks`` only), ``retry`` rows included, in no set order."""
        sql = "SELECT step, chunk_no, outcomes FROM chunk_log WHERE run_id = ?"
        params: tuple[object, ...] = (run_id,)
        if step is not None:
            sql += " AND step = ?"
            params += (step,)
        if chunks is not None:
            numbers = sorted(set(chunks))
            sql += f" AND chunk_no IN ({','.join('?' * len(numbers))})"
            params += tuple(numbers)
        cur = self._conn.execute(sql + " AND outcomes IS NOT NULL", params)
        while batch := cur.fetchmany(200):
            for step_name, chunk_no, text in batch:
                for sr, key, _hash, status, rid, error in json.loads(text):
                    yield Outcome(step_name, chunk_no, sr, key, status, rid, error)

    def journaled_rows(self, run_id: str, step: str) -> JournaledRows:
        """The final outcomes of ``step`` in this run, by key and input hash (resume)."""
        from recordsync.state.journal_content import JournaledRows

        sql = (
            "SELECT chunk_no, outcomes FROM chunk_log WHERE run_id = ? AND step = ?"
            " AND outcomes IS NOT NULL"
        )
        found = JournaledRows(step)
        for chunk_no, text in self._conn.execute(sql, (run_id, step)):
            for sr, key, input_hash, status, rid, error in json.loads(text):
                if status in FINAL_STATUSES:
                    found.add(chunk_no, sr, key, input_hash, status, rid, error)
        return found

    def done_rows(self, run_id: str, step: str) -> SourceRowSet:
        """Source rows of ``step`` with a final outcome in this run: skip them on resume."""
        index = self._done_index(run_id, step)
        return SourceRowSet.of_sorted(index[0])

    def _done_index(self, run_id: str, step: str) -> tuple[array[int], array[int]]:
        """(sorted source rows, their chunk numbers) of the rows of ``step`` with a final
        outcome: 16 bytes a row, where to find the outcome of a row without a dict of them."""
        pairs = sorted(
            (o.source_row, o.chunk_no)
            for o in self._journaled(run_id, step)
            if o.status in FINAL_STATUSES
        )
        return array("q", (p[0] for p in pairs)), array("q", (p[1] for p in pairs))

    def outcomes(self, run_id: str, step: str | None = None) -> Iterator[Outcome]:
        """Final outcomes of sent rows, in step and source-row order (for the report)."""
        final = [o for o in self._journaled(run_id, step) if o.status in FINAL_STATUSES]
        final.sort(key=lambda o: (o.step, o.source_row))
        yield from final

    def outcomes_for(
        self, run_id: str, step: str, source_rows: Iterable[int]
    ) -> dict[int, Outcome]:
        """Final outcomes of the given source rows (rows without one are absent): the
        chunks that hold them are found in an index of the step's final rows, made on first
        use and again when a row is not in it."""
        wanted = set(source_rows)
        key = (run_id, step)
        for fresh in (False, True):
            if fresh or key not in self._indexes:
                self._indexes = {key: self._done_index(run_id, step)}
            rows, chunk_nos = self._indexes[key]
            chunks: set[int] = set()
            missing = False
            for s in wanted:
                i = bisect_left(rows, s)
                if i < len(rows) and rows[i] == s:
                    chunks.add(chunk_nos[i])
                else:
                    missing = True
            if not missing or fresh:
                break
        if not chunks:
            return {}
        return {
            o.source_row: o
            for o in self._journaled(run_id, step, chunks)
            if o.source_row in wanted and o.status in FINAL_STATUSES
        }

    def next_chunk_no(self, run_id: str, step: str) -> int:
        """1 + the highest chunk number journaled for ``step`` (1 for a fresh step)."""
        row = self._conn.execute(
            "SELECT max(chunk_no) FROM chunks WHERE run_id = ? AND step = ?", (run_id, step)
        ).fetchone()
        return 1 if row[0] is None else int(row[0]) + 1

    def chunk_counts(self, run_id: str) -> dict[str, int]:
        """``{chunk state: n}`` for a run (``begun``, ``acked``, ``settled``)."""
        rows = self._conn.execute(
            "SELECT state, count(*) FROM chunks WHERE run_id = ? GROUP BY state", (run_id,)
        )
        return {state: n for state, n in rows}

"""Reading the chunk journal back: run records, chunks in flight, journaled outcomes.

The types shared by the journal's reader and writer live here too (see
:mod:`recordsync.state.journal` for how a run writes the journal and resumes).
"""

from __future__ import annotations

import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from recordsync.state.store import StateStore

FINAL_STATUSES = frozenset({"created", "updated", "failed", "in_doubt"})
PENDING = "pending"
RETRY = "retry"


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


class SourceRowSet:
    """A compact sorted set of source row numbers (8 bytes a row) with ``in`` by bisection."""

    def __init__(self, rows: Iterable[int]) -> None:
        self._rows = array("q", sorted(rows))

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
            "SELECT c.run_id, c.step, c.chunk_no, c.mapping, c.first_source_row FROM chunks c"
            " JOIN runs r ON r.run_id = c.run_id WHERE r.pipeline = ? AND c.state = 'begun'"
        )
        params: tuple[object, ...] = (self.pipeline,)
        if run_id is not None:
            sql += " AND c.run_id = ?"
            params += (run_id,)
        else:
            sql += " AND r.state = 'running'"
        chunks = self._conn.execute(sql + " ORDER BY c.run_id, c.step, c.chunk_no", params)
        out: list[PendingChunk] = []
        for run, step, chunk_no, mapping, first in chunks.fetchall():
            rows = [
                JournalRow(r[0], r[1], r[2], bool(r[3]))
                for r in self._conn.execute(
                    "SELECT source_row, source_key, input_hash, resend_safe FROM chunk_rows"
                    " WHERE run_id = ? AND step = ? AND chunk_no = ? ORDER BY source_row",
                    (run, step, chunk_no),
                )
            ]
            out.append(PendingChunk(run, step, chunk_no, mapping, first, rows))
        return out

    # -- reading back ----------------------------------------------------------------
    def done_rows(self, run_id: str, step: str) -> SourceRowSet:
        """Source rows of ``step`` with a final outcome in this run: skip them on resume."""
        cur = self._conn.execute(
            "SELECT source_row FROM chunk_rows WHERE run_id = ? AND step = ? AND status IN"
            " ('created', 'updated', 'failed', 'in_doubt')",
            (run_id, step),
        )
        return SourceRowSet(r[0] for r in cur)

    def outcomes(self, run_id: str, step: str | None = None) -> Iterator[Outcome]:
        """Final outcomes of sent rows, in step and source-row order (for the report)."""
        sql = (
            "SELECT step, chunk_no, source_row, source_key, status, record_id, error"
            " FROM chunk_rows WHERE run_id = ? AND status IN"
            " ('created', 'updated', 'failed', 'in_doubt')"
        )
        params: tuple[object, ...] = (run_id,)
        if step is not None:
            sql += " AND step = ?"
            params += (step,)
        cur = self._conn.execute(sql + " ORDER BY step, source_row", params)
        while batch := cur.fetchmany(2000):
            yield from map(Outcome._make, batch)

    def outcomes_for(
        self, run_id: str, step: str, source_rows: Iterable[int]
    ) -> dict[int, Outcome]:
        """Final outcomes of the given source rows (one bulk query per 500 rows)."""
        wanted = list(source_rows)
        out: dict[int, Outcome] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            cur = self._conn.execute(
                "SELECT step, chunk_no, source_row, source_key, status, record_id, error"
                " FROM chunk_rows WHERE run_id = ? AND step = ? AND status IN"
                f" ('created', 'updated', 'failed', 'in_doubt') AND source_row IN ({marks})",
                (run_id, step, *part),
            )
            for row in cur:
                out[row[2]] = Outcome._make(row)
        return out

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

"""The chunk journal: crash-safe resume of a run (docs/state.md, "Resume").

Every chunk is written to the journal before it is sent (:meth:`Journal.begin_chunk`,
committed and fsynced) and again when its results are in (:meth:`Journal.ack_chunk`, in the
same transaction as the ledger update; or, with ``defer_ledger=True`` as the runner uses it,
folded into the ledger from the journal in bulk later: :meth:`Journal.fold`). After a
``kill -9`` the next run of the pipeline finds the run still ``running``
(:meth:`Journal.last_incomplete_run`), reuses its run id, folds what the dead attempt
acknowledged into the ledger, settles the chunks that were in flight
(:meth:`Journal.settle_in_flight`), skips the rows whose outcome is already journaled
(:meth:`Journal.done_rows`) and builds the report of sent rows from :meth:`Journal.outcomes`.
A source row has at most one final outcome per run and step: :meth:`Journal.begin_chunk`
refuses a row already journaled (kept in a bitmap per step, seeded from the journal).

Storage (state schema version 3): one ``chunk_log`` record a chunk, its rows as JSON when
it is begun and its outcomes as JSON when it is acknowledged: one insert and one update a
chunk, not one a row.

Chunk states: ``queued`` (journaled; its request must not be written yet), ``begun`` (cleared
to be sent: it may be on the wire), ``acked``, ``settled``. The runner clears a chunk only
once the chunk before it was written (:meth:`Journal.clear_chunks`, in the commit of the next
begin), so a resume holds in doubt only chunks that may really have been sent.

Row states in the journal: ``pending`` (begun, no answer yet), ``created`` / ``updated`` /
``failed`` / ``in_doubt`` (final), ``retry`` (was in flight, safe to resend: a later chunk
of the resumed run carries its final outcome).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from recordsync.core.errors import AccountingError, RecordsyncError
from recordsync.state.journal_columns import RowMarks, as_list, first, key_and_hash
from recordsync.state.journal_outcomes import Journaled, JournalOutcomes, json_text
from recordsync.state.journal_read import (
    BEGUN,
    FINAL_STATUSES,
    PENDING,
    QUEUED,
    RETRY,
    ChunkResult,
    JournalRow,
    Outcome,
    PendingChunk,
    RunInfo,
    SourceRowSet,
)
from recordsync.state.ledger_rows import utc_now
from recordsync.state.store import INTEGRITY_ERRORS, StateStore
from recordsync.state.targets import pipeline_of

__all__ = [
    "BEGUN",
    "FINAL_STATUSES",
    "PENDING",
    "QUEUED",
    "RETRY",
    "ChunkResult",
    "Journal",
    "JournalRow",
    "Outcome",
    "PendingChunk",
    "RunInfo",
    "SourceRowSet",
]


class Journal(JournalOutcomes):
    """The run journal of one pipeline, stored in the state database: reading (inherited)
    and writing.

    The chunks this object began are remembered (mapping, keys, hashes) until they are
    acknowledged, so that an acknowledgement does not read back what it just wrote: the
    pipeline lock makes this process the journal's only writer."""

    def __init__(self, store: StateStore, pipeline: str, *, defer_ledger: bool = False) -> None:
        super().__init__(store, pipeline)
        self._running: set[str] = set()
        self._marks: dict[tuple[str, str], RowMarks] = {}
        self._begun: dict[tuple[str, str, int], tuple[str, Journaled]] = {}
        self.defer_ledger = defer_ledger
        """``True``: :meth:`ack_chunk` stores the outcomes in the journal only, and the ledger
        is brought up to date from the journal in bulk by :meth:`fold` (the runner folds
        between chunks, at the end of each step and in :meth:`finish_run`; a resumed run folds
        what the dead attempt acknowledged). One sorted bulk upsert instead of one random
        ledger write per row per chunk: far fewer pages written per commit."""

    # -- runs ------------------------------------------------------------------------
    def start_run(self, run_id: str) -> RunInfo:
        """Record a new run (``running``); starting an existing ``running`` run again counts
        one more attempt (that is how a resume reuses the run id)."""
        with self.store.transaction() as conn:
            info = self.run(run_id)
            if info is None:
                conn.execute(
                    "INSERT INTO runs (run_id, pipeline, state, started_at) VALUES (?, ?, ?, ?)",
                    (run_id, self.pipeline, "running", utc_now()),
                )
            elif info.state != "running" or info.pipeline != self.pipeline:
                raise RecordsyncError(
                    f"run {run_id} of pipeline '{pipeline_of(info.pipeline)}' is already"
                    f" {info.state}",
                    hint="start the run with a new run id",
                )
            else:
                conn.execute("UPDATE runs SET attempts = attempts + 1 WHERE run_id = ?", (run_id,))
        info = self.run(run_id)
        assert info is not None
        self._running.add(run_id)
        return info

    def resume_or_start(self, new_run_id: str) -> tuple[RunInfo, bool]:
        """The incomplete run to resume (``True``), or a new run with ``new_run_id``."""
        previous = self.last_incomplete_run()
        if previous is not None:
            info = self.start_run(previous.run_id)
            self.fold_run(previous.run_id)  # what the dead attempt acknowledged, if deferred
            return info, True
        return self.start_run(new_run_id), False

    def finish_run(self, run_id: str, state: str = "finished", *, keep_rows: bool = False) -> None:
        """Mark the run complete (``finished``, ``aborted``, ``abandoned``) once its report is
        written. Its per-row journal is deleted unless ``keep_rows``; chunk counts stay.
        Must not be called inside an open transaction."""
        if state == "running":
            raise ValueError("finish_run needs a final state, not 'running'")
        self._running.discard(run_id)
        self._begun = {k: v for k, v in self._begun.items() if k[0] != run_id}
        with self._restored_on_failure(), self.store.transaction() as conn:
            self._fold(conn, run_id)  # the ledger first: the per-row journal goes next
            conn.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?",
                (state, utc_now(), run_id),
            )
            if not keep_rows:
                conn.execute("DELETE FROM chunk_log WHERE run_id = ?", (run_id,))
        self._marks = {k: v for k, v in self._marks.items() if k[0] != run_id}
        # Fold the run's write-ahead log into the database now, so that the next run does not
        # pay for it on its first commit; and keep the -wal file small between runs.
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- chunks ----------------------------------------------------------------------
    def begin_chunk(
        self,
        run_id: str,
        step: str,
        chunk_no: int,
        first_source_row: int | None,
        rows: Sequence[JournalRow | tuple[int, str | None, str | None]],
        *,
        mapping: str | None = None,
        cleared: bool = True,
    ) -> None:
        """Journal a chunk before it is sent (committed and, with a durable store, fsynced).
        ``mapping`` (default: ``step``) is the ledger the acknowledgement updates.
        ``cleared=False`` journals it ``queued``: not to be sent until :meth:`clear_chunks`
        has committed it ``begun``, so that a resume knows it was never written."""
        journal_rows = as_list(rows, JournalRow)
        numbers = list(map(first, journal_rows))
        if run_id not in self._running:
            self._require_running(run_id)
        marks = self._marks_of(run_id, step)
        again = marks.marked(numbers)
        if again or len(set(numbers)) != len(numbers):
            twice = again or sorted(n for n in set(numbers) if numbers.count(n) > 1)
            raise AccountingError(
                f"run {run_id}, step '{step}', chunk {chunk_no}: source rows {twice[:5]} are"
                " already journaled in this run (or twice in this chunk)",
                hint="skip the rows in Journal.done_rows() and settle in-flight chunks first",
            )
        text = json_text(list(map(tuple, journal_rows)))
        try:
            with self.store.transaction() as conn:
                conn.execute(
                    "INSERT INTO chunks (run_id, step, chunk_no, mapping, first_source_row,"
                    " row_count, state, begun_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        step,
                        chunk_no,
                        mapping or step,
                        first_source_row,
                        len(journal_rows),
                        BEGUN if cleared else QUEUED,
                        utc_now(),
                    ),
                )
                conn.execute(
                    "INSERT INTO chunk_log (run_id, step, chunk_no, first_row, last_row, plain,"
                    " rows) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        step,
                        chunk_no,
                        min(numbers, default=0),
                        max(numbers, default=0),
                        int("\\u0000" not in text),
                        text,
                    ),
                )
        except INTEGRITY_ERRORS as exc:
            raise AccountingError(
                f"run {run_id}, step '{step}', chunk {chunk_no}: the chunk number is already"
                f" journaled in this run ({exc})",
                hint="number a step's chunks from Journal.next_chunk_no()",
            ) from exc
        marks.update(numbers)
        self._begun[(run_id, step, chunk_no)] = (
            mapping or step,
            dict(zip(numbers, map(key_and_hash, journal_rows), strict=True)),
        )

    def clear_chunks(self, run_id: str, step: str, chunk_nos: Iterable[int]) -> None:
        """Clear ``queued`` chunks to be sent (``begun``: their request may be written from
        the moment this commits). A chunk's request must never be written before this."""
        numbers = sorted(set(chunk_nos))
        if not numbers:
            return
        with self.store.transaction() as conn:
            conn.executemany(
                "UPDATE chunks SET state = ? WHERE run_id = ? AND step = ? AND chunk_no = ?"
                " AND state = ?",
                [(BEGUN, run_id, step, n, QUEUED) for n in numbers],
            )

    def restart_marks(self, run_id: str, step: str) -> None:
        """A resumed attempt finds journaled rows by content (:meth:`journaled_rows`), not by
        line: a line the dead attempt sent may hold another row now. From here the check that
        no source row is journaled twice covers this attempt's chunks only."""
        self._marks[(run_id, step)] = RowMarks()

    def _marks_of(self, run_id: str, step: str) -> RowMarks:
        """The source rows of ``step`` journaled in this run and not to be sent again: read
        from the journal once per step, then kept up to date by this object."""
        marks = self._marks.get((run_id, step))
        if marks is None:
            marks = RowMarks()
            for text, done in self._conn.execute(
                "SELECT rows, outcomes FROM chunk_log WHERE run_id = ? AND step = ?",
                (run_id, step),
            ):
                if done is None:
                    marks.update(r[0] for r in json.loads(text))
                else:
                    marks.update(r[0] for r in json.loads(done) if r[3] != RETRY)
            self._marks[(run_id, step)] = marks
        return marks

    # -- helpers ---------------------------------------------------------------------
    def _require_running(self, run_id: str) -> None:
        info = self.run(run_id)
        if info is None or info.state != "running" or info.pipeline != self.pipeline:
            owner = "" if info is None else pipeline_of(info.pipeline)
            state = "unknown" if info is None else f"{info.state} (pipeline '{owner}')"
            raise RecordsyncError(
                f"run {run_id} is {state}; chunks can be journaled only in a running run of"
                f" pipeline '{pipeline_of(self.pipeline)}'",
                hint="call Journal.start_run() (or resume_or_start()) first",
            )

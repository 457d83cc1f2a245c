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
it is begun and its outcomes when it is acknowledged (JSON, compressed past a few rows:
:mod:`recordsync.state.journal_codec`): one insert and one update a chunk, not one a row.

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
import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter

from recordsync.core.errors import AccountingError, RecordsyncError
from recordsync.state.journal_codec import decode, is_plain, json_text, pack
from recordsync.state.journal_columns import (
    RowMarks,
    as_list,
    first,
    outcome_rows,
    second,
    third,
)
from recordsync.state.journal_content import JournaledRows
from recordsync.state.journal_records import (
    BEGUN,
    FINAL_STATUSES,
    QUEUED,
    RETRY,
    ChunkResult,
    JournalRow,
    Outcome,
    PendingChunk,
    RunInfo,
    SourceRowSet,
)
from recordsync.state.kept_outcomes import RunTally, keep_untold
from recordsync.state.ledger_fold import Aligned, LedgerFold
from recordsync.state.ledger_rows import (
    utc_now,
    write_acknowledged,
)
from recordsync.state.store import INTEGRITY_ERRORS, StateStore
from recordsync.state.targets import pipeline_of

_status, _record_id = itemgetter(1), itemgetter(2)
"""A :class:`ChunkResult`'s status and record id."""
_row_pair = itemgetter(0, slice(1, 3))
"""A journal row's (source row, (key, input hash))."""

Journaled = dict[int, tuple[str | None, str | None]]
"""source row → (source key, input hash) of a begun chunk."""


def _align(journaled: Journaled, numbers: list[int]) -> Aligned:
    """The keys and hashes of the source rows ``numbers`` (each in ``journaled``), in order."""
    pairs = list(map(journaled.__getitem__, numbers))
    return list(map(first, pairs)), list(map(second, pairs))


class Journal:
    """The run journal of one pipeline, stored in the state database: reading it back (runs,
    chunks in flight, journaled outcomes), writing it (runs, chunks begun and acknowledged,
    chunks settled after a kill) and folding it into the ledger.

    The chunks this object began are remembered (mapping, keys, hashes) until they are
    acknowledged, so that an acknowledgement does not read back what it just wrote: the
    pipeline lock makes this process the journal's only writer."""

    def __init__(
        self,
        store: StateStore,
        pipeline: str,
        *,
        defer_ledger: bool = False,
        slices: tuple[int, int] | None = None,
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self._indexes: dict[tuple[str, str], tuple[array[int], array[int]]] = {}
        """(run, step) → :meth:`_done_index`, for :meth:`outcomes_for` (one step's)."""
        self.ledger_fold = LedgerFold(store, pipeline, slices)
        """What the acknowledgements kept for the ledger, and its writing."""
        self._guarded = False
        """In a :meth:`transaction` of this object (a failure restores what was kept)."""
        self._running: set[str] = set()
        self._marks: dict[tuple[str, str], RowMarks] = {}
        self._begun: dict[tuple[str, str, int], tuple[str, list[JournalRow]]] = {}
        """The chunks this object began and has not acknowledged: (mapping, journal rows)."""
        self._tallies: dict[str, RunTally] = {}
        """run → what this object stored of its outcomes (:func:`keep_untold` reads it)."""
        self.defer_ledger = defer_ledger
        """``True``: :meth:`ack_chunk` stores the outcomes in the journal only, and the ledger
        is brought up to date from the journal in bulk by :meth:`fold` (the runner folds
        between chunks, at the end of each step and in :meth:`finish_run`; a resumed run folds
        what the dead attempt acknowledged). One sorted bulk upsert instead of one random
        ledger write per row per chunk: far fewer pages written per commit."""

    @property
    def _conn(self) -> sqlite3.Connection:
        return self.store.connection

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
        for run, step, chunk_no, mapping, first_row, text, state in chunks.fetchall():
            rows = sorted(JournalRow(r[0], r[1], r[2], bool(r[3])) for r in json.loads(text))
            out.append(PendingChunk(run, step, chunk_no, mapping, first_row, rows, state != QUEUED))
        return out

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
                for sr, key, _hash, status, rid, error in decode(text):
                    yield Outcome(step_name, chunk_no, sr, key, status, rid, error)

    def journaled_rows(self, run_id: str, step: str) -> JournaledRows:
        """The final outcomes of ``step`` in this run, by key and input hash (resume)."""
        sql = (
            "SELECT chunk_no, outcomes FROM chunk_log WHERE run_id = ? AND step = ?"
            " AND outcomes IS NOT NULL"
        )
        found = JournaledRows(step)
        for chunk_no, text in self._conn.execute(sql, (run_id, step)):
            for sr, key, input_hash, status, rid, error in decode(text):
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

    def fold(self) -> int:
        """Write the outcomes that :meth:`ack_chunk` deferred (``defer_ledger``) to the
        ledger, in one transaction (or the caller's). Returns the number of rows folded."""
        if not self.ledger_fold.pending:
            return 0
        with self.ledger_fold.restored_on_failure(), self.store.transaction() as conn:
            return self.ledger_fold.fold(conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (nested use joins the outer one) after which, if it does not
        commit, what was kept to fold is as before it
        (:meth:`.LedgerFold.restored_on_failure`): the acknowledgements made in it write
        their slice of the ledger (:meth:`.LedgerFold.slice`)."""
        if self._conn.in_transaction:
            yield self._conn
            return
        with self.ledger_fold.restored_on_failure(), self.store.transaction() as conn:
            self._guarded = True
            try:
                yield conn
            finally:
                self._guarded = False

    def fold_run(self, run_id: str) -> int:
        """Fold every acknowledged outcome of ``run_id`` into the ledger again (idempotent:
        the same values, in chunk order). A resumed run calls it for what the attempt that
        died acknowledged but may not have folded."""
        with self.store.transaction() as conn:
            return self.ledger_fold.fold_run(conn, run_id)

    @property
    def slices(self) -> tuple[int, int] | None:
        """:attr:`.LedgerFold.slices`."""
        return self.ledger_fold.slices

    @slices.setter
    def slices(self, value: tuple[int, int] | None) -> None:
        self.ledger_fold.slices = value

    @property
    def unfolded_rows(self) -> int:
        """Ledger rows acknowledged and not yet written (:attr:`.LedgerFold.unfolded_rows`)."""
        return self.ledger_fold.unfolded_rows

    def ack_chunk(
        self,
        run_id: str,
        step: str,
        chunk_no: int,
        results: Iterable[ChunkResult | tuple[int, str, int | None, str | None]],
    ) -> None:
        """Store the outcome of every row of a begun chunk and update the ledger, in one
        transaction. Every row of the chunk needs exactly one result."""
        outcomes = as_list(results, ChunkResult)
        # a slice of the ledger fold rides along, only in a transaction of this object: the
        # store's, opened by a caller, may still roll back once this returns, and the slice
        # with it, while what was kept to fold would not be restored
        slice_here = self._guarded or not self._conn.in_transaction
        with self.transaction() as conn:
            begun = self._begun.get((run_id, step, chunk_no))
            given = list(map(first, outcomes))
            aligned: Aligned | None = None
            journaled: Journaled = {}
            if begun is not None:  # begun by this process: state, mapping and rows known
                mapping, journal_rows = begun
                if given == list(map(first, journal_rows)):  # in journal order: the common case
                    aligned = list(map(second, journal_rows)), list(map(third, journal_rows))
                else:
                    journaled = dict(map(_row_pair, journal_rows))
            else:
                mapping = self._chunk_mapping(run_id, step, chunk_no)
                row = conn.execute(
                    "SELECT rows FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no = ?",
                    (run_id, step, chunk_no),
                ).fetchone()
                journaled = {r[0]: (r[1], r[2]) for r in json.loads(row[0])}
            if aligned is None:
                if len(given) != len(journaled) or set(given) != journaled.keys():
                    missing = sorted(set(journaled) - set(given))[:5]
                    extra = sorted(set(given) - set(journaled))[:5]
                    raise AccountingError(
                        f"run {run_id}, step '{step}', chunk {chunk_no}: results do not match"
                        f" the journaled rows (missing source rows {missing}, unexpected {extra},"
                        f" {len(given)} results for {len(journaled)} rows)",
                        hint="acknowledge every row of the chunk exactly once",
                    )
                aligned = _align(journaled, given)
            if not set(map(str, map(_status, outcomes))) <= FINAL_STATUSES:
                bad = [o for o in outcomes if str(o.status) not in FINAL_STATUSES]
                raise ValueError(
                    f"not a final status for source row {bad[0].source_row}: "
                    f"{bad[0].status!r} (expected one of {sorted(FINAL_STATUSES)})"
                )
            self._store_outcomes(
                conn, run_id, step, chunk_no, mapping, outcomes, aligned, defer=self.defer_ledger
            )
            if slice_here and self.defer_ledger:
                self.ledger_fold.slice(conn)
        self._begun.pop((run_id, step, chunk_no), None)

    def _store_outcomes(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        step: str,
        chunk_no: int,
        mapping: str,
        outcomes: Sequence[ChunkResult],
        aligned: Aligned,
        chunk_state: str = "acked",
        *,
        defer: bool = False,
    ) -> None:
        """The chunk's outcomes, every row of it: final ones and (settling) ``retry``;
        ``aligned``: the rows' keys and hashes, in the order of ``outcomes``."""
        text = pack(outcome_rows(outcomes, *aligned))
        tally = self._tallies.get(run_id)
        if tally is None:
            tally = self._tallies[run_id] = RunTally()
        tally.add(step, chunk_no, mapping, outcomes, aligned[0])
        conn.execute(
            "UPDATE chunk_log SET rows = NULL, outcomes = ?, plain = plain * ? WHERE run_id = ?"
            " AND step = ? AND chunk_no = ?",
            (text, int(is_plain(text)), run_id, step, chunk_no),
        )
        conn.execute(
            "UPDATE chunks SET state = ?, acked_at = ? WHERE run_id = ? AND step = ?"
            " AND chunk_no = ?",
            (chunk_state, utc_now(), run_id, step, chunk_no),
        )
        if defer:
            self.ledger_fold.keep(run_id, step, mapping, chunk_no, outcomes, aligned)
            return
        scope = self.store.scope_id(self.pipeline, mapping)
        assert scope is not None
        write_acknowledged(
            conn,
            scope,
            self.store.run_number(run_id),
            zip(
                *aligned[:1],
                map(_record_id, outcomes),
                aligned[1],
                map(_status, outcomes),
                strict=True,
            ),
        )

    def settle_in_flight(self, run_id: str) -> list[Outcome]:
        """Settle the chunks of ``run_id`` that were journaled but never acknowledged: the
        rows of a chunk never cleared to be sent (``queued``: its request was never written)
        and the resend-safe rows of the others become ``retry`` (send them again in a new
        chunk), the rest ``in_doubt`` (held for review; the ledger records in_doubt).
        Returns the held rows."""
        held: list[Outcome] = []
        with self.store.transaction() as conn:
            for chunk in self.pending_chunks(run_id):
                journaled = {r.source_row: (r.key, r.input_hash) for r in chunk.rows}
                reason = (
                    f"in flight when run {run_id} stopped (step '{chunk.step}', chunk"
                    f" {chunk.chunk_no}); not resent because it could create a second record:"
                    " check the record service, then send it again"
                )
                settled = [
                    ChunkResult(r.source_row, RETRY)
                    if r.resend_safe or not chunk.maybe_written
                    else ChunkResult(r.source_row, "in_doubt", None, reason)
                    for r in chunk.rows
                ]
                doubt = [o for o in settled if o.status != RETRY]
                self._store_outcomes(
                    conn,
                    run_id,
                    chunk.step,
                    chunk.chunk_no,
                    chunk.mapping,
                    settled,
                    _align(journaled, list(map(first, settled))),
                    chunk_state="settled",
                )
                self._marks.pop((run_id, chunk.step), None)  # the retry rows may go again
                held.extend(
                    Outcome(
                        chunk.step,
                        chunk.chunk_no,
                        d.source_row,
                        journaled[d.source_row][0],
                        d.status,
                        None,
                        d.error,
                    )
                    for d in doubt
                )
        return held

    def _chunk_mapping(self, run_id: str, step: str, chunk_no: int) -> str:
        row = self._conn.execute(
            "SELECT mapping, state FROM chunks WHERE run_id = ? AND step = ? AND chunk_no = ?",
            (run_id, step, chunk_no),
        ).fetchone()
        if row is None or row[1] not in (BEGUN, QUEUED):
            state = "not journaled" if row is None else f"already {row[1]}"
            raise AccountingError(
                f"run {run_id}, step '{step}', chunk {chunk_no} is {state}; only a begun chunk"
                " can be acknowledged",
                hint="call begin_chunk() before sending, and ack_chunk() once per chunk",
            )
        return str(row[0])

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
            self.store.run_number(run_id)  # the ledger's name for it, given before any ack
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
        written. Its per-row journal is deleted, or with ``keep_rows`` reduced to what the
        ledger cannot tell (:mod:`.kept_outcomes`); chunk counts stay.
        Must not be called inside an open transaction."""
        if state == "running":
            raise ValueError("finish_run needs a final state, not 'running'")
        self._running.discard(run_id)
        self._begun = {k: v for k, v in self._begun.items() if k[0] != run_id}
        with self.ledger_fold.restored_on_failure(), self.store.transaction() as conn:
            self.ledger_fold.fold(conn, run_id)  # the ledger first: the per-row journal goes next
            conn.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?",
                (state, utc_now(), run_id),
            )
            if keep_rows:  # what the ledger cannot tell, for history --key
                tally = self._tallies.get(run_id)
                keep_untold(conn, self.store, self.pipeline, run_id, tally)
            else:
                conn.execute("DELETE FROM chunk_log WHERE run_id = ?", (run_id,))
        self._marks = {k: v for k, v in self._marks.items() if k[0] != run_id}
        self._tallies.pop(run_id, None)
        # The pages of the journal just deleted go back to the file system: a state file
        # holds the ledger between runs, not the free space of the largest run's journal.
        self.store.release_free_pages()
        # Fold the run's write-ahead log into the database now, so that the next run does not
        # pay for it on its first commit; and keep the -wal file small between runs.
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

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
        self._begun[(run_id, step, chunk_no)] = (mapping or step, journal_rows)

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
                    marks.update(r[0] for r in decode(done) if r[3] != RETRY)
            self._marks[(run_id, step)] = marks
        return marks

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

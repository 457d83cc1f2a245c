"""The chunk journal's outcomes (:class:`recordsync.state.journal.Journal`): a chunk's
results acknowledged (:meth:`JournalOutcomes.ack_chunk`) and, when a run is resumed, the
chunks its dead attempt left in flight settled (:meth:`JournalOutcomes.settle_in_flight`).
docs/state.md, "Resume"."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

import orjson

from recordsync.core.errors import AccountingError
from recordsync.state.journal_columns import RowMarks, as_list, first, outcome_rows
from recordsync.state.journal_fold import LedgerFold
from recordsync.state.journal_read import (
    BEGUN,
    FINAL_STATUSES,
    QUEUED,
    RETRY,
    ChunkResult,
    Outcome,
)
from recordsync.state.ledger_rows import utc_now, write_acknowledged


def json_text(rows: list[tuple[object, ...]]) -> str:
    """A chunk's rows or outcomes as compact JSON text (never bytes: SQLite would store a
    BLOB): orjson, or ``json.dumps`` for what orjson refuses (a lone surrogate, an integer
    beyond 64 bits). Both read back alike, with ``json.loads`` and SQLite's JSON functions."""
    try:
        return orjson.dumps(rows).decode()
    except orjson.JSONEncodeError:
        return json.dumps(rows, separators=(",", ":"))


Journaled = dict[int, tuple[str | None, str | None]]
"""source row → (source key, input hash) of a begun chunk."""


class JournalOutcomes(LedgerFold):
    """Acknowledging and settling chunks: the journal's state is set by :class:`Journal`."""

    _marks: dict[tuple[str, str], RowMarks]
    _begun: dict[tuple[str, str, int], tuple[str, Journaled]]
    defer_ledger: bool

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
            if begun is not None:  # begun by this process: state, mapping and rows known
                mapping, journaled = begun
            else:
                mapping = self._chunk_mapping(run_id, step, chunk_no)
                row = conn.execute(
                    "SELECT rows FROM chunk_log WHERE run_id = ? AND step = ? AND chunk_no = ?",
                    (run_id, step, chunk_no),
                ).fetchone()
                journaled = {r[0]: (r[1], r[2]) for r in json.loads(row[0])}
            given = list(map(first, outcomes))
            if len(given) != len(journaled) or set(given) != journaled.keys():
                missing = sorted(set(journaled) - set(given))[:5]
                extra = sorted(set(given) - set(journaled))[:5]
                raise AccountingError(
                    f"run {run_id}, step '{step}', chunk {chunk_no}: results do not match the"
                    f" journaled rows (missing source rows {missing}, unexpected {extra},"
                    f" {len(given)} results for {len(journaled)} rows)",
                    hint="acknowledge every row of the chunk exactly once",
                )
            bad = [o for o in outcomes if str(o.status) not in FINAL_STATUSES]
            if bad:
                raise ValueError(
                    f"not a final status for source row {bad[0].source_row}: "
                    f"{bad[0].status!r} (expected one of {sorted(FINAL_STATUSES)})"
                )
            self._store_outcomes(
                conn, run_id, step, chunk_no, mapping, outcomes, journaled, defer=self.defer_ledger
            )
            if slice_here and self.defer_ledger:
                self._slice(conn)
        self._begun.pop((run_id, step, chunk_no), None)

    def _store_outcomes(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        step: str,
        chunk_no: int,
        mapping: str,
        outcomes: Sequence[ChunkResult],
        journaled: dict[int, tuple[str | None, str | None]],
        chunk_state: str = "acked",
        *,
        defer: bool = False,
    ) -> None:
        """The chunk's outcomes, every row of it: final ones and (settling) ``retry``."""
        text = json_text(outcome_rows(outcomes, journaled))
        conn.execute(
            "UPDATE chunk_log SET rows = NULL, outcomes = ? WHERE run_id = ? AND step = ?"
            " AND chunk_no = ?",
            (text, run_id, step, chunk_no),
        )
        conn.execute(
            "UPDATE chunks SET state = ?, acked_at = ? WHERE run_id = ? AND step = ?"
            " AND chunk_no = ?",
            (chunk_state, utc_now(), run_id, step, chunk_no),
        )
        if defer:
            self._keep_to_fold(run_id, step, mapping, chunk_no, outcomes, journaled)
            return
        scope = self.store.scope_id(self.pipeline, mapping)
        assert scope is not None
        write_acknowledged(
            conn,
            scope,
            run_id,
            (
                (journaled[o.source_row][0], o.record_id, journaled[o.source_row][1], str(o.status))
                for o in outcomes
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
                    journaled,
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

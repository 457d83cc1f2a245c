"""Nightly-sync state: the identity ledger, change detection, cross-object references, the
chunk journal for crash-safe resume, the pipeline lock and mirror deletes (docs/state.md).

Everything lives in one SQLite file (:class:`StateStore`, ``.recordsync/state.db`` by
default); the lock is a ``flock``'d file beside it (:class:`PipelineLock`). Or all of it,
snapshots and lock included, lives in a PostgreSQL database (``postgresql://`` URL:
:mod:`.pg`, :mod:`.pg_lock`, :mod:`.location`). The pipeline's
state name (``name:`` of its file, else the file's stem) comes from :mod:`.names`; declared
ledger keys and the keys that references look up from :mod:`.keys`. The run's use of all this
is :mod:`recordsync.nightly` (the store knows no mapping, HTTP or report).

How a run uses it (the order matters; ``tests/state/test_resume_flow.py`` follows it)::

    store = StateStore(state_path)                           # once per run
    with store.pipeline_lock(pipeline):                      # RunAborted if running
        journal = Journal(store, pipeline)
        run, resumed = journal.resume_or_start(new_run_id)   # reuses a killed run's id
        if resumed:
            held = journal.settle_in_flight(run.run_id)      # in-flight chunks: retry / hold
        for step in steps:                                   # in pipeline order
            done = journal.journaled_rows(run.run_id, step) if resumed else None
            if resumed: journal.restart_marks(run.run_id, step)  # rows found by content
            detector = ChangeDetector(store, pipeline, mapping, full_refresh=...,
                                      match_by_ledger_id=..., journaled=done)
            chunk_no = journal.next_chunk_no(run.run_id, step)
            for rows in chunks(prepare_step(...), 1000):
                c = detector.classify(rows)                  # to_send / unchanged / skipped / done
                # c.done, c.outcomes: rows this run already sent, with their outcome
                for part in batches(c.to_send, MAX_BATCH):
                    journal.begin_chunk(run_id, step, chunk_no, first_row, journal_rows,
                                        mapping=mapping)
                    ... send part, classify answers ...
                    journal.ack_chunk(run_id, step, chunk_no, results)   # ledger updated too
                    chunk_no += 1
            if mirror deletes: apply_deletes(plan_deletes(store, ..., seen_keys, ...), delete)
        ... write the report (sent rows: journal.outcomes(run_id)) ...
        journal.finish_run(run.run_id)
"""

from __future__ import annotations

from recordsync.state.changes import (
    ChangeDetector,
    Classification,
    SendReason,
    ToSend,
    Unchanged,
    ledger_match,
)
from recordsync.state.hashing import input_hash
from recordsync.state.journal import Journal
from recordsync.state.journal_records import (
    ChunkResult,
    JournalRow,
    Outcome,
    PendingChunk,
    RunInfo,
    SourceRowSet,
)
from recordsync.state.lock import LockHolder, PipelineLock, lock_path
from recordsync.state.mirror import DeletePlan, DeleteResult, apply_deletes, plan_deletes
from recordsync.state.store import (
    DEFAULT_STATE_PATH,
    AckRow,
    Entry,
    StateStore,
    default_state_path,
)

__all__ = [
    "DEFAULT_STATE_PATH",
    "AckRow",
    "ChangeDetector",
    "ChunkResult",
    "Classification",
    "DeletePlan",
    "DeleteResult",
    "Entry",
    "Journal",
    "JournalRow",
    "LockHolder",
    "Outcome",
    "PendingChunk",
    "PipelineLock",
    "RunInfo",
    "SendReason",
    "SourceRowSet",
    "StateStore",
    "ToSend",
    "Unchanged",
    "apply_deletes",
    "default_state_path",
    "input_hash",
    "ledger_match",
    "lock_path",
    "plan_deletes",
]

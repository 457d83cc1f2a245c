"""Run one step: stream prepared rows, send the valid ones in chunks, report every row.

Rows are buffered in source order until the buffer holds a chunk's worth of valid rows (or
``FLUSH_ROWS`` rows of any kind), then the chunk is sent and every buffered row is written to
the report, so ``results.csv`` follows the source order and memory stays bounded.

When the step (or the run) is stopped — a circuit breaker, an authentication failure, an
unknown object type — the rest of the step's rows are still read and reported: valid rows as
``failed`` with an error starting ``not sent:``. The accounting stays exact.

The queue of unsettled chunks and the worker's send live in :mod:`recordsync.send.step_gate`;
writing rows to the report (settled or not sent) in :mod:`recordsync.send.step_rows`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import chain

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RecordsyncError
from recordsync.core.model import Item, PreparedRow, RowStatus, StepPlan, UnchangedBlock
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter
from recordsync.send.breaker import CircuitBreaker
from recordsync.send.chunk_body import request_body
from recordsync.send.claims import RecordClaims
from recordsync.send.plan import (
    FLUSH_ROWS,
    ChunkHook,
    Progress,
    SendOptions,
)
from recordsync.send.sender import ChunkAborted, ChunkSender
from recordsync.send.step_gate import QueuedChunk, paced
from recordsync.send.step_rows import StepRows, checked

AHEAD = 3
"""Chunks a step keeps unsettled: the one in flight and two journaled and queued behind it,
so that a slow moment on this side does not leave the service waiting for the next chunk."""

__all__ = [
    "AHEAD",
    "FLUSH_ROWS",
    "ChunkHook",
    "Item",
    "Progress",
    "SendOptions",
    "StepPlan",
    "StepRunner",
]


class StepRunner(StepRows):
    """Runs the steps of one run against one sender factory (None for a dry run)."""

    def __init__(
        self,
        writer: ReportWriter,
        options: SendOptions,
        breaker: CircuitBreaker,
        progress: Progress,
        make_sender: Callable[[str], ChunkSender] | None,
        hook: ChunkHook | None = None,
    ) -> None:
        self.writer = writer
        self.options = options
        self.breaker = breaker
        self.progress = progress
        self.make_sender = make_sender
        self.hook = hook
        self._queue: deque[QueuedChunk] = deque()
        """Chunks journaled and queued (or answered) but not yet settled, oldest first."""
        self._loose: list[Item] = []
        """Rows read into a chunk that is not queued yet."""
        self._to_ack: tuple[QueuedChunk, list[EntryResult]] | None = None
        self._plan: StepPlan | None = None
        self._stopped = False
        """Set on the worker thread when a chunk stops the step: queued chunks are not sent."""
        self._traced: bool | None = None
        """Whether the transport reports when a request is written (None: not known yet)."""
        self._claims = RecordClaims(expected=False)
        """Which row of the step holds each record id (merges found after the fact)."""

    def run(self, plan: StepPlan) -> StepTally:
        """Run one step; a stop (RecordsyncError) is raised after the step's rows are reported.

        One request at a time, on a worker thread: while a chunk is in flight, the next ones
        (up to :data:`AHEAD` chunks in all) are read, prepared, journaled and queued here, and
        answered chunks are reported; the worker sends a queued chunk the moment the one
        before it is answered and the breakers have passed.
        """
        tally = StepTally(plan.name, plan.mapping, plan.object_type)
        tally.duplicates_expected = plan.duplicates_expected
        self.writer.start_step(tally)
        self.progress.step_started(plan)
        sender = self.make_sender(plan.object_type) if self.make_sender is not None else None
        if sender is not None and plan.known_ids:
            sender.recent.append(list(plan.known_ids))
        self._plan = plan
        self._stopped = False
        self._claims.close()
        self._claims = RecordClaims(
            expected=plan.merges_expected,
            other_owners=(
                partial(self.hook.other_owners, plan)
                if self.hook is not None and sender is not None
                else None
            ),
        )
        source: Iterable[Item]  # closed at the end: a source left part-way ends at once
        if self.hook is not None:
            source = self.hook.classify(plan, self.hook.source(plan))
        else:
            source = plan.rows()
        lists = getattr(source, "lists", None) if sender is not None else None
        rows: Iterator[Item] = (
            chain.from_iterable(paced(lists, self._pace)) if lists is not None else iter(source)
        )
        limit = self.options.canary_size or self.options.chunk_size
        buffer: list[Item] = []
        self._loose = buffer  # a source that fails part-way: these rows are reported not sent
        valid = buffered = 0
        pool = ThreadPoolExecutor(1, "recordsync-send") if sender is not None else None
        try:
            for row in rows:
                if type(row) is UnchangedBlock:
                    tally.read += len(row)
                    buffered += len(row)
                    buffer.append(row)
                else:
                    assert isinstance(row, PreparedRow)
                    tally.read += 1
                    buffered += 1
                    buffer.append(checked(row))
                    valid += row.status is RowStatus.VALID
                if valid >= limit or buffered >= FLUSH_ROWS:
                    self._advance(tally, sender, pool, buffer)
                    if valid:
                        limit = self.options.chunk_size
                    buffer, valid, buffered = [], 0, 0
                    self._loose = buffer
            self._advance(tally, sender, pool, buffer)
            if self.hook is not None and sender is not None:
                self.hook.source_read(plan)
            while self._queue:
                self._settle_oldest(tally)
            self._flush_ack()
            if self.hook is not None and sender is not None:
                self.hook.step_done(plan, tally)
        except RecordsyncError as stop:
            tally.aborted = str(stop.message)
            self._flush_ack()
            self._retract_queue(tally, stop)
            self._drain(tally, rows, stop)
            raise
        finally:
            self._stopped = True  # whatever is still queued (an unexpected error) stays unsent
            close = getattr(source, "close", None)  # a generator's finally runs now
            if close is not None:
                close()
            self._wake_all()
            self._queue.clear()
            self._loose = []
            self._flush_ack()
            if pool is not None:
                pool.shutdown(wait=True)
            if self.hook is not None:
                tally.refs = self.hook.ref_counts(plan.name)
            self.progress.step_finished(tally)
        return tally

    def _advance(
        self,
        tally: StepTally,
        sender: ChunkSender | None,
        pool: ThreadPoolExecutor | None,
        buffer: list[Item],
    ) -> None:
        """Journal and queue ``buffer``'s chunk, then settle the oldest chunks until at most
        :data:`AHEAD` are unsettled.

        Only waiting for the answer separates two sends: chunks are journaled and queued while
        the one before them is in flight, and an answered chunk is acknowledged and reported
        once the next one is on the wire. If journaling fails, the chunks already queued are
        settled first; ``buffer``'s rows are then reported as not sent.
        """
        chunk = QueuedChunk(
            buffer,
            [r for r in buffer if type(r) is PreparedRow and r.status is RowStatus.VALID],
        )
        sending = bool(chunk.to_send) and sender is not None and pool is not None
        if sending:  # encoded and built here, while an earlier chunk is in flight
            assert sender is not None
            chunk.body = request_body(chunk.to_send)
            if chunk.body is not None:
                chunk.request = sender.client.build_batch(
                    sender.object_type, chunk.body, self._on_sent(chunk)
                )
        self._loose = buffer  # reported as not sent if the run stops before it is queued
        if sending and self.hook is not None and self._plan is not None:
            chunk.chunk_no = tally.chunks + 1  # the chunks queued before it are counted
            pending = self._to_ack
            gated = self.hook.gates_chunks
            try:
                with self.hook.atomic():  # one commit: the last answer's and this chunk's
                    self._flush_ack()
                    self.hook.begin(self._plan, chunk.chunk_no, chunk.to_send)
                    cleared = self._clear(self._clearable(chunk)) if gated else [chunk]
            except BaseException:
                if pending is not None:  # rolled back with the begin: acknowledged later
                    self._to_ack = pending
                while self._queue:
                    self._settle_oldest(tally)
                raise
            for c in cleared:
                c.cleared.set()
        else:
            chunk.cleared.set()  # not journaled: nothing to clear
        if chunk.to_send and buffer:
            tally.chunks += 1
            tally.sent += len(chunk.to_send)
            chunk.chunk_id = f"{tally.step}#{tally.chunks}"
            chunk.first = chunk.to_send[0].source.source_row
            if sending:
                assert sender is not None and pool is not None
                # queued: the worker sends it the moment the chunk before it is answered and
                # the breakers passed (or never, after a stop)
                payloads = [r.payload or {} for r in chunk.to_send]
                chunk.future = pool.submit(self._send, sender, chunk, payloads)
        if buffer:
            self._queue.append(chunk)
        self._loose = []
        ahead = AHEAD if sending else 1
        while len(self._queue) > ahead:
            self._settle_oldest(tally)

    def _settle_oldest(self, tally: StepTally) -> None:
        """Collect the oldest queued chunk (raise a stop after reporting it), let the worker
        put the next one on the wire, then report the collected chunk. Its acknowledgement
        is committed with the next chunk's begin (or on its own, whichever comes first).
        A chunk not yet cleared to be sent is cleared before it is waited for."""
        self._ensure_cleared(self._queue[0])
        chunk = self._queue.popleft()
        settled = self._collect(tally, chunk)
        following = next((c for c in self._queue if c.future is not None), None)
        if following is not None:
            self._ensure_cleared(following)
        if following is not None and self._traced is not False:
            # Let the worker put that chunk on the wire before the work below competes with
            # it for the interpreter lock: that work then overlaps the service's time only.
            following.sent.wait()
        if settled is not None:
            self._report(tally, *settled)

    def _settle(self, tally: StepTally, chunk: QueuedChunk) -> None:
        """Report every row of ``chunk`` with its outcome; raise a stop after reporting."""
        settled = self._collect(tally, chunk)
        if settled is not None:
            self._report(tally, *settled)

    def _collect(
        self, tally: StepTally, chunk: QueuedChunk
    ) -> tuple[QueuedChunk, list[EntryResult]] | None:
        """Wait for ``chunk``'s outcome and check the breakers. A stop (the chunk aborted, a
        breaker tripped) is raised after the chunk's rows are reported; otherwise the rows
        are left for :meth:`_report`, so that the next chunk can be sent first."""
        results: list[EntryResult] = []
        stop: RecordsyncError | None = None
        if chunk.future is not None:
            try:
                report, stop = chunk.future.result()
            except ChunkAborted as aborted:
                report, stop = aborted.report, aborted.error
            # sent or given up: the request (it holds the body and a callback into this
            # runner) is no longer needed, and must not keep a cycle alive
            chunk.request = chunk.body = None
            results = self._claims.settle(chunk.to_send, report.results)
            tally.resent_after_lost_answer += report.resent_after_lost_answer
            tally.settled_by_reading += report.settled_by_reading
            tally.unreconciled_chunks += report.unreconciled is not None
            if chunk.chunk_no:
                self._flush_ack()  # one acknowledgement pending at a time
                self._to_ack = (chunk, results)
            try:
                self.progress.chunk_done(tally.step, report)
            except RecordsyncError as failed:  # the answer is in: report it, then stop
                stop = stop or failed
        elif chunk.to_send:  # dry run
            results = [EntryResult(RowStatus.VALID)] * len(chunk.to_send)
        if stop is not None:
            self._stopped = True  # at once: the worker must not take a queued chunk now
            self._report(tally, chunk, results)
            raise stop
        return chunk, results

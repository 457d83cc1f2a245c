"""Run one step: stream prepared rows, send the valid ones in chunks, report every row.

Rows are buffered in source order until the buffer holds a chunk's worth of valid rows (or
``STEP_FLUSH_ROWS`` prepared rows, or ``STEP_FLUSH_UNCHANGED_ROWS`` rows found unchanged),
then the chunk is sent and every buffered row is written to
the report, so ``results.csv`` follows the source order and memory stays bounded.

When the step (or the run) is stopped — a circuit breaker, an authentication failure, an
unknown object type — the rest of the step's rows are still read and reported: valid rows as
``failed`` with an error starting ``not sent:``. The accounting stays exact.

The queue of unsettled chunks, the worker's send and the clearing of chunks in the journal
are a :class:`recordsync.send.step_gate.ChunkGate`, composed into the runner; the runner
reads, journals and queues the chunks and writes every row to the report, settled or not sent.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, is_, truth
from typing import cast

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RecordsyncError
from recordsync.core.model import Item, PreparedRow, RowStatus, StepPlan, UnchangedBlock
from recordsync.report.answered import record_answered
from recordsync.report.tally import StepTally
from recordsync.report.writer import NOT_SENT_PREFIX, ReportWriter
from recordsync.send.breaker import CircuitBreaker
from recordsync.send.chunk_body import request_body
from recordsync.send.claims import RecordClaims
from recordsync.send.plan import (
    DECIDED,
    ChunkHook,
    Progress,
    RowObserver,
    SendOptions,
)
from recordsync.send.sender import ChunkAborted, ChunkSender
from recordsync.send.step_gate import ChunkGate, NotSent, QueuedChunk, paced
from recordsync.tuning import sizes

_status, _payload = attrgetter("status"), attrgetter("payload")

__all__ = [
    "ChunkHook",
    "Item",
    "Progress",
    "SendOptions",
    "StepPlan",
    "StepRunner",
]


class StepRunner:
    """Runs the steps of one run against one sender factory (None for a dry run)."""

    def __init__(
        self,
        writer: ReportWriter,
        options: SendOptions,
        breaker: CircuitBreaker,
        progress: Progress,
        make_sender: Callable[[str], ChunkSender] | None,
        hook: ChunkHook | None = None,
        observer: RowObserver | None = None,
    ) -> None:
        self.writer = writer
        self.observer = observer
        """Sees every settled chunk (None: nothing watches)."""
        self.options = options
        self.breaker = breaker
        self.progress = progress
        self.make_sender = make_sender
        self.hook = hook
        self._gate = ChunkGate(hook, breaker)
        """The step's unsettled chunks, their clearing in the journal and the worker's send."""
        self._loose: list[Item] = []
        """Rows read into a chunk that is not queued yet."""
        self._claims = RecordClaims(expected=False)
        """Which row of the step holds each record id (merges found after the fact)."""

    def run(self, plan: StepPlan) -> StepTally:
        """Run one step; a stop (RecordsyncError) is raised after the step's rows are reported.

        One request at a time, on a worker thread: while a chunk is in flight, the next ones
        (up to ``sizes.CHUNKS_AHEAD`` chunks in all) are read, prepared, journaled and queued
        here, and answered chunks are reported; the worker sends a queued chunk the moment the one
        before it is answered and the breakers have passed.
        """
        tally = StepTally(plan.name, plan.mapping, plan.object_type)
        tally.duplicates_expected = plan.duplicates_expected
        self.writer.start_step(tally)
        self.progress.step_started(plan)
        sender = self.make_sender(plan.object_type) if self.make_sender is not None else None
        if sender is not None and plan.known_ids:
            sender.recent.append(list(plan.known_ids))
        self._gate.start(plan)
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
        pieces: Iterator[list[Item]] = (
            paced(lists, self._gate.pace) if lists is not None else map(_alone, source)
        )
        items: list[Item] = []  # the list being buffered: items[at:] are not read yet
        at = 0
        limit = self.options.canary_size or self.options.chunk_size
        flush, flush_unchanged = sizes.STEP_FLUSH_ROWS, sizes.STEP_FLUSH_UNCHANGED_ROWS
        buffer: list[Item] = []
        self._loose = buffer  # a source that fails part-way: these rows are reported not sent
        valid = buffered = unchanged = 0
        pool = ThreadPoolExecutor(1, "recordsync-send") if sender is not None else None
        try:
            for items in pieces:
                at, n = 0, len(items)
                counts = valid_counts(items) if n > 1 else None
                while at < n:
                    if counts is not None:  # a list of rows only: up to the next flush at once
                        end = cut(counts, at, limit - valid, flush - buffered)
                        buffer.extend(items[at:end])
                        tally.read += end - at
                        buffered += end - at
                        valid += counts[end] - counts[at]
                        at = end
                    else:
                        row = items[at]
                        at += 1
                        if type(row) is UnchangedBlock:
                            tally.read += len(row)
                            unchanged += len(row)
                            buffer.append(row)
                        else:
                            assert isinstance(row, PreparedRow)
                            tally.read += 1
                            buffered += 1
                            buffer.append(checked(row))
                            valid += row.status is RowStatus.VALID
                    if valid >= limit or buffered >= flush or unchanged >= flush_unchanged:
                        self._advance(tally, sender, pool, buffer)
                        if valid:
                            limit = self.options.chunk_size
                        buffer, valid, buffered, unchanged = [], 0, 0, 0
                        self._loose = buffer
            items, at = [], 0
            self._advance(tally, sender, pool, buffer)
            if self.hook is not None and sender is not None:
                self.hook.source_read(plan)
            while self._gate.queue:
                self._settle_oldest(tally)
            self._gate.flush_ack()
            if self.hook is not None and sender is not None:
                self.hook.step_done(plan, tally)
        except RecordsyncError as stop:
            tally.aborted = str(stop.message)
            self._gate.flush_ack()
            self._retract_queue(tally, stop)
            self._drain(tally, chain(items[at:], chain.from_iterable(pieces)), stop)
            raise
        finally:
            self._gate.stopped = True  # whatever is still queued (an unexpected error) stays unsent
            close = getattr(source, "close", None)  # a generator's finally runs now
            if close is not None:
                close()
            self._gate.wake_all()
            self._gate.queue.clear()
            self._loose = []
            self._gate.flush_ack()
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
        ``sizes.CHUNKS_AHEAD`` are unsettled.

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
                    sender.object_type, chunk.body, self._gate.on_sent(chunk)
                )
        self._loose = buffer  # reported as not sent if the run stops before it is queued
        if sending and self.hook is not None and self._gate.plan is not None:
            chunk.chunk_no = tally.chunks + 1  # the chunks queued before it are counted
            pending = self._gate.to_ack
            gated = self.hook.gates_chunks
            try:
                with self.hook.atomic():  # one commit: the last answer's and this chunk's
                    self._gate.flush_ack()
                    self.hook.begin(self._gate.plan, chunk.chunk_no, chunk.to_send)
                    cleared = self._gate.clear(self._gate.clearable(chunk)) if gated else [chunk]
            except BaseException:
                if pending is not None:  # rolled back with the begin: acknowledged later
                    self._gate.to_ack = pending
                while self._gate.queue:
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
                chunk.future = pool.submit(self._gate.send, sender, chunk, payloads)
        if buffer:
            self._gate.queue.append(chunk)
        self._loose = []
        ahead = sizes.CHUNKS_AHEAD if sending else 1
        while len(self._gate.queue) > ahead:
            self._settle_oldest(tally)

    def _settle_oldest(self, tally: StepTally) -> None:
        """Collect the oldest queued chunk (raise a stop after reporting it), let the worker
        put the next one on the wire, then report the collected chunk. Its acknowledgement
        is committed with the next chunk's begin (or on its own, whichever comes first).
        A chunk not yet cleared to be sent is cleared before it is waited for, and an
        acknowledgement still pending is committed before waiting on an answer not yet in
        (:meth:`ChunkGate.ack_before_waiting`)."""
        self._gate.ensure_cleared(self._gate.queue[0])
        chunk = self._gate.queue.popleft()
        self._gate.ack_before_waiting(chunk)
        settled = self._collect(tally, chunk)
        following = next((c for c in self._gate.queue if c.future is not None), None)
        if following is not None:
            self._gate.ensure_cleared(following)
        if following is not None and self._gate.traced is not False:
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
                self._gate.flush_ack()  # one acknowledgement pending at a time
                self._gate.to_ack = (chunk, results)
            try:
                self.progress.chunk_done(tally.step, report)
            except RecordsyncError as failed:  # the answer is in: report it, then stop
                stop = stop or failed
        elif chunk.to_send:  # dry run
            results = [EntryResult(RowStatus.VALID)] * len(chunk.to_send)
        if stop is not None:
            self._gate.stopped = True  # at once: the worker must not take a queued chunk now
            self._report(tally, chunk, results)
            raise stop
        return chunk, results

    def drain(self, plan: StepPlan, stop: RecordsyncError, *, unchecked: bool = False) -> StepTally:
        """Report a step that never started (the run was stopped before it). ``unchecked``:
        the run stopped before the schema and users were known, so no row could be validated
        against them: every row is ``failed`` with ``not sent: ...``, invalid-looking or not."""
        tally = StepTally(plan.name, plan.mapping, plan.object_type, aborted=str(stop.message))
        tally.duplicates_expected = plan.duplicates_expected
        self.writer.start_step(tally)
        self.progress.step_started(plan)
        try:
            self._drain(tally, plan.rows(), stop, unchecked=unchecked)
        except RecordsyncError as exc:  # the step's source cannot even be read now
            tally.aborted = f"{stop.message}; and its rows could not be read: {exc.message}"
        self.progress.step_finished(tally)
        return tally

    def _drain(
        self,
        tally: StepTally,
        rows: Iterable[Item],
        stop: RecordsyncError,
        *,
        counted: bool = False,
        unchecked: bool = False,
    ) -> None:
        """Report ``rows`` without sending; ``counted``: they were read (and counted) before
        the stop, else they are the rest of the source, counted here; ``unchecked``: every
        row is reported ``failed`` (not sent), whatever its status (see :meth:`drain`)."""
        reason = f"{NOT_SENT_PREFIX}{_stop_kind(stop)}: {stop.message}"
        for row in rows:
            if type(row) is UnchangedBlock:
                if not counted:
                    tally.read += len(row)
                self.writer.record_block(tally, row)
                self.progress.rows_done(len(row))
                continue
            assert isinstance(row, PreparedRow)
            if not counted:
                tally.read += 1
            row = checked(row)
            if row.status is RowStatus.VALID or unchecked:
                tally.sent += 1
                self.writer.record(tally, row, RowStatus.FAILED, None, reason)
            elif row.status in DECIDED:
                tally.sent += 1
                rid = self.hook.record_id_of(row) if self.hook is not None else None
                self.writer.record(tally, row, row.status, rid, row.error)
            else:
                self.writer.record(tally, row, row.status, None, row.error)
            self.progress.rows_done(1)

    def _retract_queue(self, tally: StepTally, stop: RecordsyncError) -> None:
        """The step stopped: the chunks still queued, in order. One the worker never sent is
        uncounted, acknowledged in the journal as not sent and its rows reported so; one it
        sent after all (a stop raised on this side while the worker had taken it) is settled:
        its outcome is reported and acknowledged. Then the rows read but not yet queued."""
        self._gate.stopped = True  # a stop raised on this side: queued chunks must not go either
        self._gate.wake_all()
        while self._gate.queue:
            chunk = self._gate.queue.popleft()
            if chunk.future is not None:
                try:
                    chunk.future.result()
                except NotSent:
                    chunk.future = None
                except BaseException:
                    pass
            if chunk.future is not None:  # sent: its outcome is known
                self._gate.flush_ack()  # one acknowledgement pending at a time
                with contextlib.suppress(RecordsyncError):  # the stop being raised says why
                    self._settle(tally, chunk)
                self._gate.flush_ack()
                continue
            if chunk.to_send:
                tally.chunks -= 1
                tally.sent -= len(chunk.to_send)
                self._ack_not_sent(chunk, stop)
            self._drain(tally, chunk.rows, stop, counted=True)
        loose, self._loose = self._loose, []
        self._drain(tally, loose, stop, counted=True)

    def _ack_not_sent(self, chunk: QueuedChunk, stop: RecordsyncError) -> None:
        """A chunk journaled but never sent (the run stopped first): acknowledge it as such."""
        if chunk.chunk_no and self.hook is not None and self._gate.plan is not None:
            reason = f"{NOT_SENT_PREFIX}{_stop_kind(stop)}: {stop.message}"
            results = [EntryResult(RowStatus.FAILED, None, reason) for _ in chunk.to_send]
            self.hook.ack(self._gate.plan, chunk.chunk_no, chunk.to_send, results)

    def _report(self, tally: StepTally, chunk: QueuedChunk, results: list[EntryResult]) -> None:
        """Write every row of a settled chunk to the report, in source order."""
        record_id_of: Callable[[PreparedRow], int | None] | None = (
            self.hook.record_id_of if self.hook is not None else None
        )
        if self.observer is not None and (results or record_id_of is not None):
            if record_id_of is not None:  # the hook tells a row's id once: both ask this
                record_id_of = _asked_once(record_id_of)
            self.observer.settled(tally.step, chunk.rows, results, record_id_of)
        if results and record_answered(self.writer, tally, chunk.rows, results):
            self.progress.rows_done(len(chunk.rows))  # every row sent and plain: one block
            return
        outcome = iter(results)
        record = self.writer.record
        explain = self._gate.plan.explain if self._gate.plan is not None else None
        count = 0
        for row in chunk.rows:
            if type(row) is UnchangedBlock:
                self.writer.record_block(tally, row)
                count += len(row)
                continue
            assert isinstance(row, PreparedRow)
            count += 1
            if row.status is RowStatus.VALID:
                r = next(outcome)
                error = r.error
                if error is not None and explain is not None and r.status is RowStatus.FAILED:
                    error = explain(row, error)
                record(tally, row, r.status, r.record_id, error)
            elif row.status in DECIDED:  # held (retry, state store) or journaled (resume)
                tally.sent += 1
                rid = record_id_of(row) if record_id_of is not None else None
                error = row.error
                if error is not None and explain is not None and row.status is RowStatus.FAILED:
                    error = explain(row, error)  # journaled by the attempt that died
                record(tally, row, row.status, rid, error)
            elif row.status is RowStatus.UNCHANGED and record_id_of is not None:
                record(tally, row, row.status, record_id_of(row), row.error)
            else:
                record(tally, row, row.status, None, row.error)
        self.progress.rows_done(count)


def _asked_once(
    record_id_of: Callable[[PreparedRow], int | None],
) -> Callable[[PreparedRow], int | None]:
    """``record_id_of`` (the hook's: it tells each row's id once) that answers again."""
    known: dict[int, int | None] = {}

    def again(row: PreparedRow) -> int | None:
        key = id(row)
        if key not in known:
            known[key] = record_id_of(row)
        return known[key]

    return again


def checked(row: PreparedRow) -> PreparedRow:
    if row.status is RowStatus.VALID and not row.payload:
        row.status = RowStatus.INVALID
        row.error = "prepared as valid but has no batch input (a bug in the mapping stage)"
    return row


def cut(counts: list[int], at: int, room_valid: int, room_rows: int) -> int:
    """Where the buffer, taking rows from ``at`` on, is full: the end of the fewest rows that
    hold ``room_valid`` VALID rows or are ``room_rows`` rows (both at least 1), or the end of
    the list; ``counts``: :func:`valid_counts` of the list. The row at which a loop adding one
    row at a time would flush, found by bisection."""
    full = bisect_left(counts, counts[at] + room_valid, at + 1)
    return min(full, at + room_rows, len(counts) - 1)


def _alone(item: Item) -> list[Item]:
    return [item]


def valid_counts(items: list[Item]) -> list[int] | None:
    """For a list of prepared rows only, each :func:`checked`: how many of ``items[:k]`` are
    VALID, for k from 0 to ``len(items)`` (the buffer's cuts found by bisection, no loop in
    Python); None for a list holding anything else (its items are taken one by one)."""
    if not set(map(type, items)) <= {PreparedRow}:
        return None
    flags = list(map(is_, map(_status, items), repeat(RowStatus.VALID)))
    if not all(map(truth, compress(map(_payload, items), flags))):  # valid, with no input
        deque(map(checked, cast(list[PreparedRow], items)), maxlen=0)
        flags = list(map(is_, map(_status, items), repeat(RowStatus.VALID)))
    return list(accumulate(flags, initial=0))


def _stop_kind(stop: RecordsyncError) -> str:
    name = type(stop).__name__
    return {
        "RunAborted": "run aborted",
        "VolumeDropped": "step skipped by its volume guard",
        "AuthError": "authentication failed",
        "ObjectTypeNotFound": "object type not found, step aborted",
        "RetriableApiError": "service unavailable or unreachable",
        "FatalApiError": "service error",
        "ApiError": "service error",
    }.get(name, f"run stopped ({name})")

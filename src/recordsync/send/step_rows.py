"""The step runner's report side: every row of a settled chunk written in source order, and
a stopped step's rows (queued, read or still unread) reported as not sent, so the accounting
stays exact."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RecordsyncError
from recordsync.core.model import Item, PreparedRow, RowStatus, StepPlan, UnchangedBlock
from recordsync.report.answered import record_answered
from recordsync.report.tally import StepTally
from recordsync.report.writer import NOT_SENT_PREFIX, ReportWriter
from recordsync.send.plan import DECIDED, Progress
from recordsync.send.step_gate import ChunkGate, NotSent, QueuedChunk


class StepRows(ChunkGate):
    """Reporting rows for :class:`recordsync.send.step.StepRunner` (which sets the state)."""

    writer: ReportWriter
    progress: Progress
    _loose: list[Item]
    _settle: Callable[[StepTally, QueuedChunk], None]

    def drain(
        self, plan: StepPlan, stop: RecordsyncError, *, unchecked: bool = False
    ) -> StepTally:
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
        self._stopped = True  # a stop raised on this side: queued chunks must not go either
        self._wake_all()
        while self._queue:
            chunk = self._queue.popleft()
            if chunk.future is not None:
                try:
                    chunk.future.result()
                except NotSent:
                    chunk.future = None
                except BaseException:
                    pass
            if chunk.future is not None:  # sent: its outcome is known
                self._flush_ack()  # one acknowledgement pending at a time
                with contextlib.suppress(RecordsyncError):  # the stop being raised says why
                    self._settle(tally, chunk)
                self._flush_ack()
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
        if chunk.chunk_no and self.hook is not None and self._plan is not None:
            reason = f"{NOT_SENT_PREFIX}{_stop_kind(stop)}: {stop.message}"
            results = [EntryResult(RowStatus.FAILED, None, reason) for _ in chunk.to_send]
            self.hook.ack(self._plan, chunk.chunk_no, chunk.to_send, results)

    def _report(self, tally: StepTally, chunk: QueuedChunk, results: list[EntryResult]) -> None:
        """Write every row of a settled chunk to the report, in source order."""
        if results and record_answered(self.writer, tally, chunk.rows, results):
            self.progress.rows_done(len(chunk.rows))  # every row sent and plain: one block
            return
        outcome = iter(results)
        record = self.writer.record
        explain = self._plan.explain if self._plan is not None else None
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
                rid = self.hook.record_id_of(row) if self.hook is not None else None
                error = row.error
                if error is not None and explain is not None and row.status is RowStatus.FAILED:
                    error = explain(row, error)  # journaled by the attempt that died
                record(tally, row, row.status, rid, error)
            elif row.status is RowStatus.UNCHANGED and self.hook is not None:
                record(tally, row, row.status, self.hook.record_id_of(row), row.error)
            else:
                record(tally, row, row.status, None, row.error)
        self.progress.rows_done(count)


def checked(row: PreparedRow) -> PreparedRow:
    if row.status is RowStatus.VALID and not row.payload:
        row.status = RowStatus.INVALID
        row.error = "prepared as valid but has no batch input (a bug in the mapping stage)"
    return row


def _stop_kind(stop: RecordsyncError) -> str:
    name = type(stop).__name__
    return {
        "RunAborted": "run aborted",
        "AuthError": "authentication failed",
        "ObjectTypeNotFound": "object type not found, step aborted",
        "RetriableApiError": "service unavailable or unreachable",
        "FatalApiError": "service error",
        "ApiError": "service error",
    }.get(name, f"run stopped ({name})")

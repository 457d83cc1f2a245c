"""Send one chunk: resend after transient failures, settle what may have been applied.

The outcome is one :class:`EntryResult` per entry, in order, always: a chunk never loses a row.

- 2xx: the answer is reconciled (:mod:`recordsync.reconcile.batch`); a mismatch makes every
  entry ``in_doubt`` ("unreconciled chunk: ...").
- 401/403/3xx and 404 raise (AuthError / ObjectTypeNotFound) with every outcome attached.
- 413: split in halves, each sent on its own (recursively); one entry alone fails alone.
- other 4xx: every entry ``failed`` with the service's message.
- 429: wait Retry-After and resend (own budget). 5xx, timeouts, dropped connections: back off
  with jitter and resend, up to ``RetryPolicy.max_attempts`` tries.
- When a failed try may have been applied (``Verdict.maybe_applied``), entries safe to resend
  as is (:mod:`recordsync.core.safety`) go again; each other entry is read back
  (:mod:`recordsync.send.settle`): applied (its record is taken), absent (resent as it was),
  or unknown (``in_doubt``, with what reading found). Nothing is resent by another key.
  Reading back looks for what was written after the chunk's mark, a time on the service's
  own clock: before the step's first chunk that may create a record no key finds, the newest
  ``updated_at`` of the type is read (one request a step); later chunks take the
  ``created_at`` of a record the last answered chunk created, read by id only when an
  answer is lost.
- Out of tries: maybe-applied entries are read back once more (applied: their record;
  absent: failed); the rest are ``failed`` when safe to resend as is, else ``in_doubt``.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain

import httpx

from recordsync.core.chunk_report import ChunkAborted, ChunkReport, EntryResult
from recordsync.core.errors import FatalApiError
from recordsync.core.model import BatchInput, RowStatus
from recordsync.core.safety import chunk_interferes, resend_as_is_safe
from recordsync.reconcile.batch import Unreconciled, reconcile_batch
from recordsync.send.client import Attempt, RecordServiceClient
from recordsync.send.http_policy import Verdict, is_fatal
from recordsync.send.readback import Mark, Unreadable
from recordsync.send.retry import RetryBudget
from recordsync.send.settle import (
    Decision,
    Settler,
    earlier_run_mark,
    earlier_send_doubt,
    lost_answer_doubt,
)

__all__ = ["ChunkAborted", "ChunkReport", "ChunkSender"]

TOO_LARGE = 413
RECENT_CHUNKS = 2000
"""Answered chunks whose record ids the sender keeps, never taken for another entry when
reading back (a chunk's mark may be older than their records)."""


@dataclass(slots=True)
class _Run:
    """The state of one chunk's sending, shared by its parts after a split."""

    entries: list[BatchInput]
    outcome: list[EntryResult | None]
    maybe_applied: list[bool]
    interferes: bool | None = None
    mark: Mark | None = None
    """The step's mark when the chunk was first sent: what reading back looks for is newer."""
    anchor: int | None = None
    """A record the step's last answered chunk created: its ``created_at``, read when an
    answer is lost, is a later mark than ``mark``."""
    claimed: set[int] = field(default_factory=set)
    """Record ids that reading back gave to entries of this chunk."""


class ChunkSender:
    """Sends the chunks of one step, strictly one after another."""

    def __init__(self, client: RecordServiceClient, object_type: str) -> None:
        self.client = client
        self.object_type = object_type
        self.settler = Settler(client, object_type)
        self.recent: deque[list[int]] = deque(maxlen=RECENT_CHUNKS)
        """Record ids of the step's last answered chunks (see :data:`RECENT_CHUNKS`)."""
        self.mark: Mark | None = None
        """The newest ``updated_at`` of the type before the step's first chunk that may
        create a record no key finds (read once: :meth:`_mark_before`)."""
        self.marked = False
        self.anchor: int | None = None
        """The last record an answered chunk created (see :attr:`_Run.anchor`)."""

    def send(
        self,
        chunk_id: str,
        first_source_row: int,
        entries: list[BatchInput],
        body: bytes | None = None,
        on_sent: Callable[[], object] | None = None,
        *,
        request: httpx.Request | None = None,
        doubtful: list[float | None] | None = None,
    ) -> ChunkReport:
        """Send one chunk (retrying as the policy says). ``body``: the entries already
        encoded as a batch request (:func:`recordsync.send.client.encode_batch`), used for
        the first try. ``on_sent``: called when a try's request is written (see
        :meth:`RecordServiceClient.attempt`). ``request``: the first try's request, built
        ahead from ``body`` and ``on_sent`` (:meth:`RecordServiceClient.build_batch`).
        ``doubtful``: per entry, when an earlier send of it may have been applied (None: it
        was not): such an entry is read back before the first try, unless safe to resend."""
        report = ChunkReport(chunk_id, first_source_row, len(entries))
        run = _Run(entries, [None] * len(entries), [False] * len(entries))
        run.mark, run.anchor = self._mark_before(entries), self.anchor
        pending = list(range(len(entries)))
        try:
            if doubtful is not None:
                pending = self._settle_earlier(report, run, doubtful)
                if len(pending) != len(entries):  # the body built ahead holds them all
                    body = request = None
            self._drive(report, run, pending, body, on_sent, request)
        finally:
            if run.claimed:  # records that reading back gave to this chunk's entries
                self.recent.append(list(run.claimed))
            report.results = [
                r if r is not None else EntryResult(RowStatus.IN_DOUBT, None, "no outcome recorded")
                for r in run.outcome
            ]
        return report

    def _mark_before(self, entries: list[BatchInput]) -> Mark | None:
        """The step's mark; read (once a step) before the first chunk that may create a
        record no key finds, unless an answered chunk created a record to mark by."""
        if (
            self.anchor is None
            and not self.marked
            and not all(resend_as_is_safe(self.object_type, e) for e in entries)
        ):
            self.marked = True
            try:
                self.mark = self.settler.reader.newest()
            except Unreadable:
                self.mark = None  # only absent can be decided after a lost answer
        return self.mark

    def _chunk_mark(self, run: _Run) -> Mark | None:
        """The mark of a chunk whose answer was lost: the ``created_at`` of the record the
        step's last answered chunk created (one read), else the step's mark (older)."""
        if run.anchor is not None:
            anchor, run.anchor = run.anchor, None
            # gone or unreadable: the older mark stays (it counts more records, never fewer)
            with contextlib.suppress(Unreadable):
                run.mark = self.settler.reader.created_mark(anchor)
        return run.mark

    def _safe(self, run: _Run, i: int) -> bool:
        """Whether entry ``i`` may go again as is after a maybe-applied try. Whether entries
        interfere is only worked out when an answer was lost, never on the common path."""
        entry = run.entries[i]
        if run.interferes is None:
            run.interferes = chunk_interferes(self.object_type, run.entries)
        if run.interferes:
            return entry.get("match_by") == "id" and entry.get("match_value") is not None
        return resend_as_is_safe(self.object_type, entry)

    def _drive(
        self,
        report: ChunkReport,
        run: _Run,
        pending: list[int],
        first: bytes | None,
        on_sent: Callable[[], object] | None,
        built: httpx.Request | None,
    ) -> None:
        """Send the entries ``pending`` until each has an outcome (one request at a time)."""
        budget = RetryBudget(self.client.retry)
        try:
            self._tries(report, run, pending, first, on_sent, built, budget)
        finally:
            report.waited_s += budget.waited

    def _tries(
        self,
        report: ChunkReport,
        run: _Run,
        pending: list[int],
        first: bytes | None,
        on_sent: Callable[[], object] | None,
        built: httpx.Request | None,
        budget: RetryBudget,
    ) -> None:
        while pending:
            objects = [run.entries[i] for i in pending]
            attempt = self.client.batch_once(
                self.object_type, objects, first, on_sent, request=built
            )
            first = built = None  # a later try sends what is pending then, encoded anew
            on_sent = None
            verdict = attempt.verdict
            report.attempts += 1
            if verdict.kind == "ok":
                self._accept(report, attempt, pending, run)
                return
            report.last_problem = verdict.describe
            if verdict.status == TOO_LARGE and len(pending) > 1:
                report.split += 1
                half = len(pending) // 2
                self._drive(report, run, pending[:half], None, None, None)
                self._drive(report, run, pending[half:], None, None, None)
                return
            if is_fatal(verdict) or verdict.kind == "rejected":
                reason = verdict.describe
                if verdict.status == TOO_LARGE:
                    reason = (
                        f"{reason}: this row alone is larger than the service accepts in one"
                        " request; shorten its longest values"
                    )
                for i in pending:
                    run.outcome[i] = self._final(run, i, reason, None)
                if is_fatal(verdict):
                    for i, r in enumerate(run.outcome):  # parts of a split not sent yet
                        if r is None:
                            run.outcome[i] = EntryResult(RowStatus.FAILED, None, reason)
                    error = verdict.to_error()
                    assert isinstance(error, FatalApiError)
                    raise ChunkAborted(error, report)
                return
            if verdict.maybe_applied:
                pending = self._settle(report, run, verdict, pending)
            wait = budget.next_wait(verdict)
            if wait is None:
                tries = f"{verdict.describe} (after {report.attempts} tries)"
                self._give_up(report, run, tries, pending)
                return
            if pending:
                budget.wait(wait)

    def _settle(
        self, report: ChunkReport, run: _Run, verdict: Verdict, pending: list[int]
    ) -> list[int]:
        """After a maybe-applied try: the entries to send again; the others get an outcome."""
        keep: list[int] = []
        unsafe: list[int] = []
        first: set[int] = set()
        for i in pending:
            if not run.maybe_applied[i]:
                run.maybe_applied[i] = True
                first.add(i)
            (keep if self._safe(run, i) else unsafe).append(i)
        decided = self._read_back(report, run, unsafe)
        self._take(run, decided, keep, lambda d: lost_answer_doubt(verdict.describe, d))
        keep.sort()
        report.resent_after_lost_answer += sum(i in first for i in keep)
        return keep

    def _read_back(self, report: ChunkReport, run: _Run, todo: list[int]) -> dict[int, Decision]:
        if not todo:
            return {}
        if run.interferes:
            why = (
                "another entry of this chunk may have written the same record (the same email"
                " or domain, a name another entry matches by, or a changed email or domain),"
                " so reading back cannot tell which entry wrote what"
            )
            return {i: Decision("unknown", why=why) for i in todo}
        return self._decide(report, run, todo, self._chunk_mark(run))

    def _decide(
        self, report: ChunkReport, run: _Run, todo: list[int], mark: Mark | None
    ) -> dict[int, Decision]:
        report.settled_by_reading += len(todo)
        known = set(chain.from_iterable(self.recent))
        claimed = run.claimed | known
        decided = self.settler.settle(run.entries, todo, mark, claimed)
        run.claimed = claimed - known
        return decided

    def _settle_earlier(
        self, report: ChunkReport, run: _Run, doubtful: list[float | None]
    ) -> list[int]:
        """Read back the entries an earlier send may have applied: the entries to send."""
        keep: list[int] = []
        todo: dict[float, list[int]] = {}
        for i, since in enumerate(doubtful):
            if since is None or resend_as_is_safe(self.object_type, run.entries[i]):
                keep.append(i)
            else:
                todo.setdefault(since, []).append(i)
        for since, group in todo.items():
            mark = earlier_run_mark(since)
            self._take(run, self._decide(report, run, group, mark), keep, earlier_send_doubt)
        keep.sort()
        return keep

    @staticmethod
    def _take(
        run: _Run,
        decided: dict[int, Decision],
        keep: list[int],
        doubt: Callable[[Decision], EntryResult],
    ) -> None:
        """Absent: to send (``keep``); applied: its record; otherwise ``doubt``."""
        for i, d in decided.items():
            if d.kind == "absent":
                keep.append(i)
            elif d.kind == "applied" and d.result is not None:
                run.outcome[i] = d.result
            else:
                run.outcome[i] = doubt(d)

    def _give_up(self, report: ChunkReport, run: _Run, reason: str, pending: list[int]) -> None:
        decided = self._read_back(report, run, [i for i in pending if run.maybe_applied[i]])
        for i in pending:
            run.outcome[i] = self._final(run, i, reason, decided.get(i))

    def _final(self, run: _Run, i: int, reason: str, decision: Decision | None) -> EntryResult:
        """The outcome of an entry that will not be sent again in this run."""
        if decision is not None and decision.kind == "applied" and decision.result is not None:
            return decision.result
        if decision is not None and decision.kind == "absent":
            return EntryResult(RowStatus.FAILED, None, f"{reason}; read back: not applied")
        if run.maybe_applied[i] and not self._safe(run, i):
            why = decision or Decision("unknown", why="it was not read back")
            return lost_answer_doubt(reason, why)
        return EntryResult(RowStatus.FAILED, None, reason)

    def _accept(self, report: ChunkReport, attempt: Attempt, pending: list[int], run: _Run) -> None:
        """A 2xx answer: each pending entry's outcome, or all in doubt if it doesn't add up."""
        outcome = run.outcome
        try:
            if attempt.body_error is not None:
                raise Unreconciled(attempt.body_error)
            results = reconcile_batch(len(pending), attempt.body)
        except Unreconciled as exc:
            report.unreconciled = str(exc)
            for i in pending:
                outcome[i] = EntryResult(RowStatus.IN_DOUBT, None, f"unreconciled chunk: {exc}")
            return
        ids: list[int] = []
        for r in results:
            if r.record_id is not None:
                ids.append(r.record_id)
                if r.status is RowStatus.CREATED:
                    self.anchor = r.record_id
        self.recent.append(ids)
        if len(pending) == len(outcome):  # every entry answered in this try (the common case)
            outcome[:] = results
            return
        for i, result in zip(pending, results, strict=True):
            outcome[i] = result

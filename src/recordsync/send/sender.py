"""Send one chunk: resend after transient failures, hold what cannot be resent safely.

The outcome is one :class:`EntryResult` per entry, in order, always: a chunk never loses a row.

- 2xx: the answer is reconciled (:mod:`recordsync.reconcile.batch`); a mismatch makes every
  entry ``in_doubt`` ("unreconciled chunk: ...").
- 401/403/3xx and 404 raise (AuthError / ObjectTypeNotFound) with the outcome of the chunk
  attached, so the runner can report the rows.
- other 4xx: every entry ``failed`` with the service's message.
- 429: wait Retry-After and resend (own budget). 5xx, timeouts, dropped connections: back off
  with jitter and resend, up to ``RetryPolicy.max_attempts`` tries.
- When a failed try may have been applied (``Verdict.maybe_applied``), only entries that are
  safe to resend go out again (:mod:`recordsync.send.safety`); the others are ``in_doubt``.
- Out of tries: ``failed`` with the last reason, except entries that may have been applied and
  are not safe to resend as is: those are ``in_doubt``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import httpx

from recordsync.errors import FatalApiError
from recordsync.model import BatchInput, RowStatus
from recordsync.reconcile.batch import EntryResult, Unreconciled, reconcile_batch
from recordsync.send.client import RecordServiceClient
from recordsync.send.http_policy import Verdict, is_fatal
from recordsync.send.retry import RetryBudget
from recordsync.send.safety import (
    NameTracker,
    as_name_match,
    chunk_interferes,
    resend_as_is_safe,
)


@dataclass(slots=True)
class ChunkReport:
    """What happened to one chunk (for the report and the logs)."""

    chunk_id: str
    first_source_row: int
    size: int
    attempts: int = 0
    waited_s: float = 0.0
    unreconciled: str | None = None
    resent_by_name: int = 0
    resent_after_lost_answer: int = 0
    last_problem: str | None = None
    results: list[EntryResult] = field(default_factory=list)
    sent_as: dict[int, BatchInput] = field(default_factory=dict)
    """Entries last sent with another key than they came with (resent by name after a lost
    answer), by index: results.csv names the key that went on the wire."""


class ChunkAborted(Exception):
    """A fatal verdict stopped the chunk; ``report.results`` holds an outcome for every entry."""

    def __init__(self, error: FatalApiError, report: ChunkReport) -> None:
        super().__init__(str(error))
        self.error = error
        self.report = report


class ChunkSender:
    """Sends the chunks of one step, strictly one after another."""

    def __init__(self, client: RecordServiceClient, object_type: str) -> None:
        self.client = client
        self.object_type = object_type
        self.names = NameTracker()

    def note(self, entries: list[BatchInput]) -> None:
        """Count the names of a chunk about to be sent (for resends by name: a name is
        resent as a match only if it is unique among the chunks noted so far). The runner
        notes a chunk when it queues it, off the sender's thread."""
        add = self.names.add
        for entry in entries:
            add(entry.get("name"))

    def send(
        self,
        chunk_id: str,
        first_source_row: int,
        entries: list[BatchInput],
        body: bytes | None = None,
        on_sent: Callable[[], object] | None = None,
        *,
        noted: bool = False,
        request: httpx.Request | None = None,
    ) -> ChunkReport:
        """Send one chunk (retrying as the policy says). ``body``: the entries already
        encoded as a batch request (:func:`recordsync.send.client.encode_batch`), used for
        the first try. ``on_sent``: called when a try's request is written (see
        :meth:`RecordServiceClient.attempt`). ``noted``: the entries' names were already
        given to :meth:`note`. ``request``: the first try's request, built ahead from
        ``body`` and ``on_sent`` (:meth:`RecordServiceClient.build_batch`)."""
        report = ChunkReport(chunk_id, first_source_row, len(entries))
        if not noted:
            self.note(entries)
        memo: list[bool] = []

        def interferes() -> bool:
            """Whether entries may touch each other's records: only worked out when a
            resend is considered (an answer was lost), never on the common path."""
            if not memo:
                memo.append(chunk_interferes(self.object_type, entries))
            return memo[0]

        def safe(entry: BatchInput) -> bool:
            if interferes():
                return entry.get("match_by") == "id" and entry.get("match_value") is not None
            return resend_as_is_safe(self.object_type, entry)

        current = list(entries)
        outcome: list[EntryResult | None] = [None] * len(entries)
        maybe_applied = [False] * len(entries)
        pending = list(range(len(entries)))
        budget = RetryBudget(self.client.retry)

        def give_up(i: int, reason: str) -> EntryResult:
            if maybe_applied[i] and not safe(entries[i]):
                return EntryResult(RowStatus.IN_DOUBT, None, f"in doubt: {reason}")
            return EntryResult(RowStatus.FAILED, None, reason)

        first, built = body, request
        while pending:
            objects = [current[i] for i in pending]
            attempt = self.client.batch_once(
                self.object_type, objects, first, on_sent, request=built
            )
            first = built = None  # a later try sends what is pending then, encoded anew
            verdict = attempt.verdict
            report.attempts += 1
            if verdict.kind == "ok":
                self._accept(report, attempt.body, attempt.body_error, pending, outcome)
                break
            report.last_problem = verdict.describe
            if is_fatal(verdict) or verdict.kind == "rejected":
                for i in pending:
                    outcome[i] = give_up(i, verdict.describe)
                report.results = [r for r in outcome if r is not None]
                if is_fatal(verdict):
                    error = verdict.to_error()
                    assert isinstance(error, FatalApiError)
                    raise ChunkAborted(error, report)
                return report
            if verdict.maybe_applied:
                pending = self._keep_safe(
                    report, verdict, pending, current, outcome, maybe_applied, safe, interferes()
                )
            wait = budget.next_wait(verdict)
            if wait is None:
                tries = f"after {report.attempts} tries"
                for i in pending:
                    outcome[i] = give_up(i, f"{verdict.describe} ({tries})")
                break
            if pending:
                budget.wait(wait)
        report.waited_s = budget.waited
        if None in outcome:
            report.results = [
                r if r is not None else EntryResult(RowStatus.IN_DOUBT, None, "no outcome recorded")
                for r in outcome
            ]
        else:
            report.results = cast("list[EntryResult]", outcome)  # no None left
        return report

    def _keep_safe(
        self,
        report: ChunkReport,
        verdict: Verdict,
        pending: list[int],
        current: list[BatchInput],
        outcome: list[EntryResult | None],
        maybe_applied: list[bool],
        safe: Callable[[BatchInput], bool],
        interferes: bool,
    ) -> list[int]:
        keep: list[int] = []
        for i in pending:
            first = not maybe_applied[i]
            maybe_applied[i] = True
            entry = current[i]
            if safe(entry):
                keep.append(i)
                report.resent_after_lost_answer += first
            elif not interferes and self.names.unique(entry.get("name")):
                current[i] = report.sent_as[i] = as_name_match(entry)
                report.resent_by_name += 1
                report.resent_after_lost_answer += first
                keep.append(i)
            else:
                outcome[i] = EntryResult(
                    RowStatus.IN_DOUBT,
                    None,
                    f"in doubt: {verdict.describe}; the batch may have been applied and this "
                    "entry cannot be resent without risking a duplicate (no dedup key, name not "
                    "unique in this step): check the target, then retry or drop it",
                )
        return keep

    @staticmethod
    def _accept(
        report: ChunkReport,
        body: object,
        body_error: str | None,
        pending: list[int],
        outcome: list[EntryResult | None],
    ) -> None:
        try:
            if body_error is not None:
                raise Unreconciled(body_error)
            results = reconcile_batch(len(pending), body)
        except Unreconciled as exc:
            report.unreconciled = str(exc)
            for i in pending:
                outcome[i] = EntryResult(RowStatus.IN_DOUBT, None, f"unreconciled chunk: {exc}")
            return
        if len(pending) == len(outcome):  # every entry answered in this try (the common case)
            outcome[:] = results
            return
        for i, result in zip(pending, results, strict=True):
            outcome[i] = result

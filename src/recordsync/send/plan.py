"""What a step is made of, and the seams the step runner calls: the plan of a step
(:class:`recordsync.core.model.StepPlan`), the send options, the progress display and the state
store's hook."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from recordsync.core.chunk_report import ChunkReport, EntryResult
from recordsync.core.model import Item, PreparedRow, RowStatus, StepPlan
from recordsync.report.tally import StepTally
from recordsync.send.chunks import check_chunk_size

DECIDED = frozenset({RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED, RowStatus.IN_DOUBT})
"""Rows that arrive with an outcome: sent by an earlier attempt of this run, or held."""


@dataclass(frozen=True, slots=True)
class SendOptions:
    chunk_size: int = 100
    canary_size: int | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        check_chunk_size(self.chunk_size)
        if self.canary_size is not None:
            check_chunk_size(self.canary_size, key="canary_size")


class Progress(Protocol):
    def step_started(self, plan: StepPlan) -> None: ...
    def rows_done(self, count: int) -> None: ...
    def chunk_done(self, step: str, report: ChunkReport) -> None: ...
    def step_finished(self, tally: StepTally) -> None: ...


class RowObserver(Protocol):
    """Sees every settled chunk of a step as it is reported (the read-back's sample and the
    record ids a run changed, :mod:`recordsync.run.written`): ``rows`` in source order (rows
    and blocks found unchanged among them), ``results`` one per row sent (valid), and the
    record id of a row reported ``unchanged`` (None: not known). Must be cheap: it is on
    the run's path, once a chunk."""

    def settled(
        self,
        step: str,
        rows: list[Item],
        results: list[EntryResult],
        record_id_of: Callable[[PreparedRow], int | None] | None,
    ) -> None: ...


class ChunkHook(Protocol):
    """Seam for the state store (:mod:`recordsync.nightly.hook`): classify rows as they
    stream (unchanged / held), journal each chunk before it is sent and acknowledge it after.

    Every method the step runner (:mod:`recordsync.send.step`) and the run
    (:mod:`recordsync.run.runner`) call on a hook is declared here; a hook with nothing to do
    for one answers neutrally (no other owners, no reference counts, one attempt, no chunks
    before)."""

    @property
    def gates_chunks(self) -> bool:
        """True: a begun chunk is sent only once :meth:`clear` has journaled it as cleared to
        be sent (so a resume knows which chunks may have been written); False: a begun chunk
        is cleared at once, and :meth:`clear` is never called."""
        ...

    def source(self, plan: StepPlan) -> Iterable[Item]:
        """The step's rows: ``plan.rows()``, or ``plan.digested(...)`` when the state store
        keeps a snapshot of source-row digests for the step."""
        ...

    def classify(self, plan: StepPlan, rows: Iterable[Item]) -> Iterable[Item]: ...
    def record_id_of(self, row: PreparedRow) -> int | None: ...
    def begin(self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow]) -> None: ...
    def clear(self, plan: StepPlan, chunk_nos: list[int]) -> None:
        """Journal begun chunks as cleared to be sent (in the caller's :meth:`atomic`
        transaction, if any); called only when :attr:`gates_chunks`."""
        ...

    def ack(
        self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow], results: list[EntryResult]
    ) -> None: ...
    def other_owners(
        self, plan: StepPlan, pairs: list[tuple[str | None, int]]
    ) -> dict[int, list[str]]:
        """For ``(key, record id)`` pairs of rows just answered ``updated``: the keys other
        than the row's own that hold each record id (merges found after the fact,
        :mod:`recordsync.send.claims`); ``{}`` for a hook that keeps no keys."""
        ...

    def source_read(self, plan: StepPlan) -> None:
        """Every row of the step was read and its chunks queued; the last of them may still
        be in flight (the state store writes the ledger meanwhile)."""

    def step_done(self, plan: StepPlan, tally: StepTally) -> None:
        """Every row of the step was reported and every chunk acknowledged (mirror deletes)."""

    def ref_counts(self, step: str) -> dict[str, dict[str, Any]]:
        """The step's reference outcomes, once it has run (the report's ``references``);
        ``{}`` when the hook resolves no references."""
        ...

    def atomic(self) -> AbstractContextManager[object]:
        """One state transaction (around a chunk's journal entry)."""
        ...

    def attempts(self) -> int:
        """How many tries this run has had (a resumed run: more than one; else 1)."""
        ...

    def chunks_before(self, step: str) -> int:
        """The chunks of ``step`` that earlier attempts of this run sent (0 for a first
        attempt): the report of a resumed run counts every attempt's chunks."""
        ...

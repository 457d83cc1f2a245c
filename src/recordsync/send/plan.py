"""What a step is made of, and the seams the step runner calls: the plan of a step, the
send options, the progress display and the state store's hook."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from recordsync.model import PreparedRow, RowStatus, UnchangedBlock
from recordsync.reconcile.batch import EntryResult
from recordsync.report.tally import StepTally
from recordsync.send.chunks import check_chunk_size
from recordsync.send.sender import ChunkReport

FLUSH_ROWS = 5_000
Item = PreparedRow | UnchangedBlock
"""What a step's row stream yields: prepared rows, and blocks of rows found unchanged."""
DECIDED = frozenset({RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED, RowStatus.IN_DOUBT})
"""Rows that arrive with an outcome: sent by an earlier attempt of this run, or held."""


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One step to run: its rows are produced lazily, when the step starts."""

    name: str
    mapping: str
    object_type: str
    rows: Callable[[], Iterable[PreparedRow]]
    estimate: Callable[[], int | None] | None = None
    digested: Callable[[Any, bytes, Any], Iterable[Item]] | None = None
    """``digested(snapshot, fingerprint, owned)``: the rows with source-row digests, rows found
    in the snapshot as UnchangedBlocks (:mod:`recordsync.prepare_digests`); None: not offered.
    ``owned(keys)`` (or None): the keys that have a record of their own in the ledger (their
    rows claim their dedup keys first in the merge scan, :mod:`recordsync.prepare_merges`)."""
    fingerprint: Callable[[], bytes | None] | None = None
    """What the rows' batch inputs depend on besides their cells (None: no digests)."""
    duplicates_expected: bool = False
    """The mapping declares duplicate rows expected: they do not fail the run."""
    merges_expected: bool = False
    """The mapping declares merges expected: rows landing on a record another row holds
    stay ``updated`` (noted in the report) instead of ``merged``."""
    explain: Callable[[PreparedRow, str], str] | None = None
    """A failed entry's error told as its row's (:mod:`recordsync.reconcile.field_errors`)."""
    known_ids: frozenset[int] = frozenset()
    """Record ids known to belong to rows (a retry: the earlier run's): reading back after a
    lost answer never takes one of them for another row."""


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


class ChunkHook(Protocol):
    """Seam for the state store (:mod:`recordsync.send.state_hook`): classify rows as they
    stream (unchanged / held), journal each chunk before it is sent and acknowledge it after."""

    def source(self, plan: StepPlan) -> Iterable[Item]:
        """The step's rows: ``plan.rows()``, or ``plan.digested(...)`` when the state store
        keeps a snapshot of source-row digests for the step."""
        ...

    def classify(self, plan: StepPlan, rows: Iterable[Item]) -> Iterable[Item]: ...
    def record_id_of(self, row: PreparedRow) -> int | None: ...
    def begin(self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow]) -> None: ...
    def ack(
        self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow], results: list[EntryResult]
    ) -> None: ...
    def source_read(self, plan: StepPlan) -> None:
        """Every row of the step was read and its chunks queued; the last of them may still
        be in flight (the state store writes the ledger meanwhile)."""

    def step_done(self, plan: StepPlan, tally: StepTally) -> None:
        """Every row of the step was reported and every chunk acknowledged (mirror deletes)."""

    def atomic(self) -> AbstractContextManager[object]:
        """One state transaction (around a chunk's journal entry)."""

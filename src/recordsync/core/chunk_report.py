"""What happened to one chunk: each entry's outcome, the sender's report, and the stop that
carries it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from recordsync.core.errors import FatalApiError
from recordsync.core.model import RowStatus


class EntryResult(NamedTuple):
    """The outcome of one entry of a batch (a named tuple: a hundred are made per answer,
    on the sender's side of every chunk)."""

    status: RowStatus
    record_id: int | None = None
    error: str | None = None


@dataclass(slots=True)
class ChunkReport:
    """What happened to one chunk (for the report and the logs)."""

    chunk_id: str
    first_source_row: int
    size: int
    attempts: int = 0
    waited_s: float = 0.0
    unreconciled: str | None = None
    resent_after_lost_answer: int = 0
    settled_by_reading: int = 0
    split: int = 0
    """Times the chunk (or a part of it) was split in halves after a 413."""
    last_problem: str | None = None
    results: list[EntryResult] = field(default_factory=list)


class ChunkAborted(Exception):
    """A fatal verdict stopped the chunk; ``report.results`` holds an outcome for every entry."""

    def __init__(self, error: FatalApiError, report: ChunkReport) -> None:
        super().__init__(str(error))
        self.error = error
        self.report = report

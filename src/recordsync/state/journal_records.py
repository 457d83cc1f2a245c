"""The chunk journal's records: run records, journal rows, chunk results, outcomes, and the
statuses a journaled row goes through (:mod:`recordsync.state.journal` writes and reads them)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable
from typing import NamedTuple

FINAL_STATUSES = frozenset({"created", "updated", "failed", "in_doubt"})


PENDING = "pending"


RETRY = "retry"


QUEUED = "queued"


"""A chunk journaled but not cleared to be sent: its request was never written."""


BEGUN = "begun"


"""A chunk cleared to be sent (or journaled by a writer that sends at once): maybe written."""


class JournalRow(NamedTuple):
    """A row of a chunk about to be sent. ``resend_safe``: resending it cannot create a second
    record (it matches by id, email or name, or dedups on create); decided by the runner."""

    source_row: int
    key: str | None
    input_hash: str | None
    resend_safe: bool = True


class ChunkResult(NamedTuple):
    """The acknowledged outcome of one row of a chunk."""

    source_row: int
    status: str
    record_id: int | None = None
    error: str | None = None


class Outcome(NamedTuple):
    """A journaled row, as read back for the report or for resume."""

    step: str
    chunk_no: int
    source_row: int
    source_key: str | None
    status: str
    record_id: int | None
    error: str | None


class RunInfo(NamedTuple):
    run_id: str
    pipeline: str
    state: str
    started_at: str
    finished_at: str | None
    attempts: int


class PendingChunk(NamedTuple):
    run_id: str
    step: str
    chunk_no: int
    mapping: str
    first_source_row: int | None
    rows: list[JournalRow]
    maybe_written: bool = True
    """False: the chunk was never cleared to be sent (``queued``), so never written."""


class SourceRowSet:
    """A compact sorted set of source row numbers (8 bytes a row) with ``in`` by bisection."""

    def __init__(self, rows: Iterable[int]) -> None:
        self._rows = array("q", sorted(rows))

    @classmethod
    def of_sorted(cls, rows: array[int]) -> SourceRowSet:
        """A set over ``rows``, already sorted (not copied)."""
        made = cls(())
        made._rows = rows
        return made

    def __contains__(self, source_row: object) -> bool:
        if not isinstance(source_row, int):
            return False
        i = bisect_left(self._rows, source_row)
        return i < len(self._rows) and self._rows[i] == source_row

    def __len__(self) -> int:
        return len(self._rows)

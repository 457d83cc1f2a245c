"""Data that flows between the pipeline stages (read → map → resolve → validate → send →
reconcile → report). Every stage speaks these types; no stage reaches into another's internals.

    SourceRow      one row as read from a CSV or Parquet source, with where it came from
    PreparedRow    a source row turned into a batch input (or into the reason it cannot be one)
    RowResult      the final outcome of one source row: one line of results.csv
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = Any
BatchInput = dict[str, JSON]
"""One entry of ``{"objects": [...]}``: name, match_by, match_value, fields, profile_image_url."""

MAX_BATCH = 100
"""The service's maximum number of entries in one batch request."""


class RowStatus(StrEnum):
    """Status of a source row, as written in the ``status`` column of ``results.csv``."""

    VALID = "valid"  # dry run: would be sent
    INVALID = "invalid"  # could not be turned into a valid batch input; not sent
    DUPLICATE = "duplicate"  # another row of the same source has the same key; not sent
    UNCHANGED = "unchanged"  # same input as last acknowledged send (state store); not sent
    CREATED = "created"
    UPDATED = "updated"
    FAILED = "failed"  # sent, and the service (or the network) failed it
    IN_DOUBT = "in_doubt"  # sent, no answer, resending is not safe: held for review


@dataclass(slots=True)
class SourceRow:
    """One row of a source file.

    ``source_row`` is the 1-based line number in the file where the row starts for CSV (the
    header is line 1, so the first data row is usually line 2), and the 1-based row number
    for Parquet. ``values`` holds the original columns as read (strings for CSV).
    """

    source_file: str
    source_row: int
    values: dict[str, Any]


@dataclass(slots=True)
class PreparedRow:
    """A source row after map, resolve and validate.

    ``payload`` is the batch input to send when ``status`` is VALID; otherwise it may be
    None, and ``error`` says which column, which value and which rule failed.
    ``key`` is the row's source key (the match value used for duplicate detection and for the
    identity ledger); ``owner_resolution`` says how ``owned_by_user_id`` was found
    (e.g. ``users:email``, ``owners_file``, ``default``, ``unowned``, ``unknown``).
    """

    source: SourceRow
    status: RowStatus
    payload: BatchInput | None = None
    match_by: str | None = None
    match_value: Any = None
    key: str | None = None
    error: str | None = None
    owner_resolution: str | None = None
    suggestions: dict[str, Any] = field(default_factory=dict)
    digest: tuple[int, int] | None = None
    """The source row's digest (:mod:`recordsync.state.digests`), when the run keeps a
    snapshot for change detection."""


@dataclass(slots=True)
class UnchangedBlock:
    """Consecutive source rows of one file found unchanged from their digests alone, without
    being mapped (:mod:`recordsync.state.snapshots`): reported ``unchanged`` with the key,
    match rule, match value and record id the last run left for them."""

    source_file: str
    source_rows: list[int]
    snapshot_rows: Any
    """Row numbers in the snapshot (a numpy int64 array)."""
    keys: list[str]
    match_by: list[str | None]
    match_value: list[str | None]
    record_ids: list[int | None]

    def __len__(self) -> int:
        return len(self.source_rows)


@dataclass(slots=True)
class RowResult:
    """The outcome of one source row: one line of ``results.csv``."""

    step: str
    source_file: str
    source_row: int
    match_by: str | None
    match_value: Any
    status: RowStatus
    record_id: int | None = None
    error: str | None = None
    owner_resolution: str | None = None
    original: dict[str, Any] = field(default_factory=dict)


RESULTS_COLUMNS = (
    "step",
    "source_file",
    "source_row",
    "match_by",
    "match_value",
    "status",
    "record_id",
    "error",
)
"""Column order of ``results.csv`` (machine-readable; schedulers and scripts rely on it)."""

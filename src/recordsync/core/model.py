"""Data that flows between the pipeline stages (read → map → resolve → validate → send →
reconcile → report). Every stage speaks these types; no stage reaches into another's internals.

    SourceRow      one row as read from a CSV or Parquet source, with where it came from
    PreparedRow    a source row turned into a batch input (or into the reason it cannot be one)
    RowResult      the final outcome of one source row: one line of results.csv
    StepPlan       one step to run (the step runner's input; the progress display shows it)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import chain
from operator import attrgetter
from typing import Any, Protocol, TypeVar

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
    MERGED = "merged"  # folds (or folded) into the record another row of the source claims


_origin_of, _source_row = attrgetter("_origin"), attrgetter("source_row")


class RowValues(Protocol):
    """Where a :class:`SourceRow` made without its values dict gets it: the batch the row was
    read in (:class:`recordsync.read.batch.BatchValues`)."""

    def values_of(self, source_row: int) -> dict[str, Any]:
        """The original values of row ``source_row`` (a new dict)."""
        ...

    def cells_of(self, column: str, source_rows: list[int]) -> list[Any]:
        """``values_of(row).get(column)`` of each of ``source_rows``, no dict made."""
        ...


class SourceRow:
    """One row of a source file.

    ``source_row`` is the 1-based line number in the file where the row starts for CSV (the
    header is line 1, so the first data row is usually line 2), and the 1-based row number
    for Parquet. ``values`` holds the original columns as read (strings for CSV).

    ``SourceRow(file, row, values)`` holds the dict it is given. ``prepare_step`` makes its
    rows with ``origin`` (the batch they were read in) instead: only failing rows and a few
    readers ever look at the original cells, so the dict is made on first access of
    ``values`` — then kept, and the batch let go. Until then the row keeps its batch alive.
    Otherwise a plain record: equality compares file, row and values (as the dataclass this
    was did); copies and pickles carry the values dict, never the batch.
    """

    __slots__ = ("_origin", "_values", "source_file", "source_row")
    __match_args__ = ("source_file", "source_row", "values")
    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, like an eq dataclass

    def __init__(
        self,
        source_file: str,
        source_row: int,
        values: dict[str, Any] | None = None,
        origin: RowValues | None = None,
    ) -> None:
        self.source_file = source_file
        self.source_row = source_row
        self._values = values
        self._origin = origin if values is None else None

    @property
    def values(self) -> dict[str, Any]:
        v = self._values
        if v is None:
            origin = self._origin
            v = origin.values_of(self.source_row) if origin is not None else {}
            self._values, self._origin = v, None
        return v

    @values.setter
    def values(self, values: dict[str, Any]) -> None:
        self._values, self._origin = values, None

    @staticmethod
    def cells(sources: list[SourceRow], column: str) -> list[Any]:
        """``s.values.get(column)`` of each of ``sources``, without making the values dict of
        a row that has none yet: the cells of the rows of one batch are taken from its
        column at once (:meth:`RowValues.cells_of`)."""
        n = len(sources)
        origins = list(map(_origin_of, sources))
        first: RowValues | None = origins[0] if n else None
        # one batch's rows, none with its dict made yet (a row keeps its origin until then)
        if first is not None and origins.count(first) == n:
            return first.cells_of(column, list(map(_source_row, sources)))
        out: list[Any] = [None] * n
        pending: dict[int, tuple[RowValues, list[int], list[int]]] = {}
        for i, s in enumerate(sources):
            if s._values is not None:
                out[i] = s._values.get(column)
            elif s._origin is not None:
                origin = s._origin
                got = pending.get(id(origin))
                if got is None:
                    got = pending[id(origin)] = (origin, [], [])
                got[1].append(i)
                got[2].append(s.source_row)
        for origin, at, rows in pending.values():
            for i, v in zip(at, origin.cells_of(column, rows), strict=True):
                out[i] = v
        return out

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SourceRow)
        return (self.source_file, self.source_row, self.values) == (
            other.source_file,
            other.source_row,
            other.values,
        )

    def __repr__(self) -> str:
        return (
            f"SourceRow(source_file={self.source_file!r}, source_row={self.source_row!r}, "
            f"values={self.values!r})"
        )

    def __reduce__(self) -> tuple[type[SourceRow], tuple[str, int, dict[str, Any]]]:
        return (SourceRow, (self.source_file, self.source_row, self.values))


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
    encoded: bytes | None = None
    """``payload`` as JSON, when change detection made it with the input hash
    (:func:`recordsync.state.hashing.encode_input`): the request body is joined from these."""
    maybe_applied_since: float | None = None
    """An earlier send of this row may have been applied, at or after this time (epoch): the
    sender reads it back before sending it (:mod:`recordsync.send.settle`)."""
    salvage: Salvage | None = None
    """What could still be read of a malformed line (mirror deletes: unreadable is not
    absent); None for a row that parsed."""


@dataclass(slots=True)
class Salvage:
    """The keys a malformed line may hold (:mod:`recordsync.prepare.salvage`): its cells under
    every column alignment their count allows, and the match key each gives (None: none).
    ``hides`` says why the line may hide other rows or a key that could not be read (mirror
    deletes of the step are then skipped); None when every key it may hold is in ``keys``."""

    alignments: list[dict[str, Any]]
    keys: list[str | None]
    hides: str | None = None


@dataclass(slots=True)
class UnchangedBlock:
    """Consecutive source rows of one file found unchanged from their digests alone, without
    being mapped (:mod:`recordsync.state.snapshots`): reported ``unchanged`` with the key,
    match rule, match value and record id the last run left for them.

    The columns are Arrow arrays as the snapshot holds them (never made into Python objects
    row by row: the report writes them in blocks), or lists of the same values."""

    source_file: str
    source_rows: Any
    """Line (row) numbers: a numpy int64 array or a list of ints."""
    snapshot_rows: Any
    """Row numbers in the snapshot (a numpy int64 array)."""
    keys: Any
    """str per row."""
    match_by: Any
    """str or None per row."""
    match_value: Any
    """str or None per row."""
    record_ids: Any
    """int or None per row."""
    cells: dict[int, Any] | None = None
    """The cells (one-row Arrow batches) of a few of these rows, by line, when the run reads
    back a sample of rows found unchanged (:mod:`recordsync.prepare.cell_sample`)."""

    def __len__(self) -> int:
        return len(self.source_rows)

    def by_record_id(self) -> None:
        """Report the rows with the key they would be sent by (``match_by_ledger_id``): ``id``
        and the record id (the rows are all in the ledger with one)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rids = arrow_of(self.record_ids, pa.int64())
        has = pc.is_valid(rids)
        self.match_by = pc.if_else(has, pa.scalar("id"), arrow_of(self.match_by, pa.string()))
        mvs = arrow_of(self.match_value, pa.string())
        self.match_value = pc.if_else(has, pc.cast(rids, pa.string()), mvs)


def values_of(column: Any) -> list[Any]:
    """The Python values of an :class:`UnchangedBlock` column (Arrow, numpy or a list)."""
    convert = getattr(column, "to_pylist", None) or getattr(column, "tolist", None)
    return list(column) if convert is None else list(convert())


def arrow_of(column: Any, type_: Any) -> Any:
    """An :class:`UnchangedBlock` column as one contiguous Arrow array of ``type_``."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.Array):
        return column if column.type == type_ else column.cast(type_)
    return pa.array(list(column), type_)


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


Item = PreparedRow | UnchangedBlock
"""What a step's row stream yields: prepared rows, and blocks of rows found unchanged."""

T = TypeVar("T")


class Blocks(Iterator[T]):
    """A stream made a list at a time (a prepared slice of rows): iterated, it gives the
    items one by one, flattened in C (no generator frame per item); a stage that works on
    lists reads :attr:`lists` instead (one or the other, never both)."""

    __slots__ = ("_items", "ledger_shared", "lists")

    def __init__(
        self, lists: Iterator[list[T]], ledger_shared: frozenset[int] | None = None
    ) -> None:
        self.lists = lists
        self._items = chain.from_iterable(lists)
        self.ledger_shared = ledger_shared
        """The hashes (Python ``hash``) of the declared ledger keys that two rows or more of
        the stream may share, as the duplicate scan before the first row found them: a row
        whose ledger key's hash is not in it has a key no other row of the stream has. None:
        not known (every key must be compared)."""

    def __iter__(self) -> Iterator[T]:
        return self._items

    def __next__(self) -> T:
        return next(self._items)

    def close(self) -> None:
        """Close the stream of lists (a generator's ``finally`` runs now, not when it is
        collected): a step that stops part-way closes what it was reading."""
        close = getattr(self.lists, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One step to run: its rows are produced lazily, when the step starts."""

    name: str
    mapping: str
    object_type: str
    rows: Callable[[], Iterable[PreparedRow]]
    estimate: Callable[[], int | None] | None = None
    digested: Callable[[Any, bytes, Any, Any], Iterable[Item]] | None = None
    """``digested(snapshot, fingerprint, owned, marks)``: the rows with source-row digests, rows
    found in the snapshot as UnchangedBlocks (:mod:`recordsync.prepare.digests`); None: not
    offered. ``owned(keys)`` (or None): the keys that have a record of their own in the ledger
    (their rows claim their dedup keys first in the merge scan,
    :mod:`recordsync.prepare.merges`). ``marks`` (or None): where the marks of the batches read
    go (:mod:`recordsync.state.batch_marks`)."""
    fingerprint: Callable[[], bytes | None] | None = None
    """What the rows' batch inputs depend on besides their cells (None: no digests)."""
    rows_of: Callable[[Any], Iterable[PreparedRow]] | None = None
    """``rows_of(mapping)``: the rows of the step prepared from another mapping config (the
    step's own with a narrowed query: the database's diff, a cursor's window)."""
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

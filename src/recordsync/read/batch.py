"""What the readers yield: record batches of source rows with their line numbers."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa


@dataclass(slots=True)
class BadLine:
    """A line that could not be read as a row (wrong number of cells, bad quoting)."""

    line: int
    text: str
    message: str
    hides: str | None = None
    """Why other rows may hide in this line (a quote that swallowed lines): mirror deletes
    of the step are skipped, with this reason."""


@dataclass(slots=True)
class SourceBatch:
    """Rows read from one file: ``rows[i]`` is the 1-based line (CSV) or row (Parquet) number
    of ``batch`` row ``i``; ``bad`` are malformed lines that fall among these rows."""

    file: str
    batch: pa.RecordBatch
    rows: npt.NDArray[np.int64]
    bad: list[BadLine] = field(default_factory=list)

    def split(self, n: int) -> tuple[SourceBatch, SourceBatch]:
        """The first ``n`` rows and the others, as two batches (no copy of the rows; ``0 < n
        < len(rows)``). Each malformed line goes with the part whose rows it falls among:
        the first when it comes before the second part's first row."""
        if not 0 < n < len(self.rows):
            raise ValueError(f"cannot split a batch of {len(self.rows)} rows at {n}")
        limit = int(self.rows[n])
        head = [b for b in self.bad if b.line < limit]
        rest = [b for b in self.bad if b.line >= limit]
        return (
            SourceBatch(self.file, self.batch.slice(0, n), self.rows[:n], head),
            SourceBatch(self.file, self.batch.slice(n), self.rows[n:], rest),
        )


class BatchValues:
    """The original values of a batch's rows, made into dicts only for the rows asked for
    (the ``origin`` of lazily made :class:`recordsync.core.model.SourceRow` s).

    The first rows asked for are read one at a time; once more than ``num_rows // 16 + 16``
    have been, the whole batch is turned into Python lists at once (cheaper per row) and the
    rest are read from those. A row's dict is what ``dict(zip(names, cells))`` gives."""

    __slots__ = ("_batch", "_columns", "_left", "_lists", "_rows")

    def __init__(self, batch: pa.RecordBatch, rows: npt.NDArray[np.int64]) -> None:
        self._batch = batch
        self._rows = rows  # row numbers, ascending (as SourceBatch.rows)
        self._lists: list[list[Any]] | None = None
        self._columns: dict[str, list[Any]] = {}
        """Single columns as Python lists (:meth:`cells_of`)."""
        self._left = batch.num_rows // 16 + 16  # rows still read one at a time

    def cells_of(self, column: str, source_rows: list[int]) -> list[Any]:
        """``values_of(row).get(column)`` of each of ``source_rows`` (rows of this batch):
        the column is made a Python list once, no row's dict is made."""
        at = np.searchsorted(self._rows, source_rows)
        inside = np.minimum(at, max(len(self._rows) - 1, 0))
        if not len(self._rows) or not np.array_equal(self._rows[inside], source_rows):
            missing = [r for r in source_rows if r not in set(self._rows.tolist())]
            raise KeyError(f"row {missing[0]} is not in this batch")
        names = self._batch.schema.names
        if column not in names:
            return [None] * len(source_rows)
        cells = self._columns.get(column)
        if cells is None:
            last = len(names) - 1 - names[::-1].index(column)  # as dict(zip(...)) keeps
            if self._lists is not None:
                cells = self._lists[last]
            else:
                cells = self._columns[column] = self._batch.column(last).to_pylist()
        return list(map(cells.__getitem__, at.tolist()))

    def values_of(self, source_row: int) -> dict[str, Any]:
        i = int(np.searchsorted(self._rows, source_row))
        if i >= len(self._rows) or self._rows[i] != source_row:
            raise KeyError(f"row {source_row} is not in this batch")
        names = self._batch.schema.names
        lists = self._lists
        if lists is None:
            if self._left > 0:
                self._left -= 1
                return dict(zip(names, [c[i].as_py() for c in self._batch.columns], strict=True))
            lists = self._lists = [c.to_pylist() for c in self._batch.columns]
        return dict(zip(names, [c[i] for c in lists], strict=True))


def may_contain(arr: pa.Array, char: str) -> bool:
    """False when no value of the string array ``arr`` can contain ``char`` (one ASCII
    character), decided by one scan of its data buffer; True means "maybe, look closer"."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return True
    _, offsets, data = arr.buffers()
    if data is None or not len(arr):
        return False
    # a slice's values only (a slice shares the buffers of its whole batch)
    wide = np.dtype(np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    ends = np.frombuffer(offsets, wide, count=len(arr) + 1, offset=arr.offset * wide.itemsize)
    start, end = int(ends[0]), int(ends[-1])
    if end <= start:
        return False
    if _memchr is not None:  # in place: a copy of the values cost four times the search
        return _memchr(data.address + start, ord(char), end - start) is not None
    return bool(memoryview(data)[start:end].tobytes().find(char.encode("ascii")) >= 0)


def _find_memchr() -> Any | None:
    """The C library's ``memchr`` (a pointer, or None when the byte is not found), or None
    where it cannot be loaded."""
    try:
        memchr = ctypes.CDLL(None).memchr
    except (OSError, AttributeError):
        return None
    memchr.restype = ctypes.c_void_p
    memchr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    return memchr


_memchr = _find_memchr()

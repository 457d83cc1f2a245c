"""The journal's per-chunk work done column-wise, the loops in C (``map``, ``zip``,
``itemgetter``): a chunk's journal rows and outcomes, and which of its rows are journaled
already. The same values as one Python loop over the rows, about 1–2 µs a row less of the
run's main thread (docs/run.md, "Client CPU")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

from recordsync.core.model import RowStatus
from recordsync.state.journal_records import ChunkResult, JournalRow

T = TypeVar("T", JournalRow, ChunkResult)

_JOURNALED = {status: status.value for status in RowStatus} | {
    RowStatus.MERGED: RowStatus.FAILED.value
}
"""A row's outcome as journaled: a merged row is journaled failed (its key never owns the
record it landed on)."""
_status, _record_id, _error = attrgetter("status"), attrgetter("record_id"), attrgetter("error")
_source, _source_row, _key = attrgetter("source"), attrgetter("source_row"), attrgetter("key")
first, second, third, fourth = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(3)
key_and_hash = itemgetter(1, 2)
"""A journal row's (key, input hash)."""


def journal_rows(rows: Sequence[Any], hashes: dict[int, str], safe: list[bool]) -> list[JournalRow]:
    """A chunk's :class:`JournalRow`: each prepared row's source row, key, input hash (from
    ``hashes``, by the row's ``id``) and whether resending it is safe (``safe``)."""
    return list(
        map(
            tuple.__new__,
            repeat(JournalRow),
            zip(
                map(_source_row, map(_source, rows)),
                map(_key, rows),
                map(hashes.get, map(id, rows)),
                safe,
                strict=True,
            ),
        )
    )


def chunk_results(rows: Sequence[Any], results: Sequence[Any]) -> list[ChunkResult]:
    """A chunk's :class:`ChunkResult`: each prepared row's source row with its
    ``EntryResult`` (status as journaled, record id, error)."""
    return list(
        map(
            tuple.__new__,
            repeat(ChunkResult),
            zip(
                map(_source_row, map(_source, rows)),
                map(_JOURNALED.__getitem__, map(_status, results)),
                map(_record_id, results),
                map(_error, results),
                strict=True,
            ),
        )
    )


def as_list(items: Iterable[Any], kind: type[T]) -> list[T]:
    """``items`` as a list of ``kind`` (plain tuples converted); no copy of each item when
    all are of that kind already (the runner's)."""
    given = list(items)
    if set(map(type, given)) == {kind}:
        return given
    return [r if type(r) is kind else kind(*r) for r in given]


def outcome_rows(
    outcomes: Sequence[ChunkResult], keys: list[str | None], hashes: list[str | None]
) -> list[tuple[Any, ...]]:
    """The journal's record of a chunk's outcomes: (source row, key, input hash, status,
    record id, error) each; ``keys`` and ``hashes``: the rows', in the order of ``outcomes``."""
    return list(
        zip(
            map(first, outcomes),
            keys,
            hashes,
            map(str, map(second, outcomes)),
            map(third, outcomes),
            map(fourth, outcomes),
            strict=True,
        )
    )


class RowMarks:
    """A set of source row numbers as a bitmap (a bit a row up to the highest one seen; a
    plain set for negative numbers): which rows of a step are journaled, for 1M rows 125 KB."""

    def __init__(self) -> None:
        self._bits = bytearray()
        self._other: set[int] = set()
        self._top = -1
        """The highest number in the set (-1: none at or above 0)."""

    def __contains__(self, n: int) -> bool:
        if n < 0:
            return n in self._other
        i = n >> 3
        return i < len(self._bits) and bool(self._bits[i] >> (n & 7) & 1)

    def marked(self, numbers: list[int]) -> list[int]:
        """The ``numbers`` in the set, in their order; at once when all are above the highest
        in it (a run's chunks, in source order)."""
        if not numbers or min(numbers) > self._top:
            return []
        return [n for n in numbers if n in self]

    def update(self, numbers: Iterable[int]) -> None:
        if type(numbers) is list and numbers and min(numbers) >= 0:
            low, high = min(numbers), max(numbers)
            if len(set(numbers)) == high - low + 1:  # a run of numbers (a chunk's rows): at once
                self._mark_run(low, high)
                return
        bits = self._bits
        top = self._top
        for n in numbers:
            if n < 0:
                self._other.add(n)
                continue
            i = n >> 3
            if i >= len(bits):
                bits.extend(bytes(max(i + 1 - len(bits), len(bits) // 2)))
            bits[i] |= 1 << (n & 7)
            if n > top:
                top = n
        self._top = top

    def _mark_run(self, low: int, high: int) -> None:
        """Mark every number from ``low`` to ``high`` (0 or more): the bytes they fall in
        or-ed with a mask, as one integer."""
        bits = self._bits
        start, end = low >> 3, (high >> 3) + 1
        if end > len(bits):
            bits.extend(bytes(max(end - len(bits), len(bits) // 2)))
        mask = ((1 << (high - low + 1)) - 1) << (low & 7)
        bits[start:end] = (int.from_bytes(bits[start:end], "little") | mask).to_bytes(
            end - start, "little"
        )
        self._top = max(self._top, high)

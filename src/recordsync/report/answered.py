"""A chunk's answered rows as ``results.csv`` lines, column-wise (the loops in C).

:meth:`recordsync.report.writer.ReportWriter.record` writes one row at a time: about 3.5 µs
a row, a tenth of the client's CPU in a run. Most chunks are the plain case: every row sent,
answered ``created`` or ``updated`` without an error, no cell to quote or neutralise. For
those, :func:`answered_columns` builds the same lines from the chunk's columns, to be written
with one ``csv.writer.writerows`` call; any other chunk gets None and is written row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any, cast

from recordsync.core.model import PreparedRow, RowStatus
from recordsync.report.blocks import plain
from recordsync.report.csvsafe import TRIGGERS, neutralise
from recordsync.report.tally import OWNER_OUTCOMES, StepTally
from recordsync.report.writer import ReportWriter

_ANSWERED = frozenset({RowStatus.CREATED, RowStatus.UPDATED})
_status, _record_id, _error = itemgetter(0), itemgetter(1), itemgetter(2)
_source, _payload = attrgetter("source"), attrgetter("payload")
_suggestions = attrgetter("suggestions")
_source_row, _source_file = attrgetter("source_row"), attrgetter("source_file")
_row_status, _owner = attrgetter("status"), attrgetter("owner_resolution")
_match_by = itemgetter("match_by")
_STR, _STR_OR_INT = frozenset({str}), frozenset({str, int})
_LINE = "%s%s,%s,%s,%s,%s,\r\n"
"""A results.csv line (csv.writer's excel dialect) of cells none of which needs quoting:
the step and file (one text), source row, match_by, match_value, status, record id, and
an empty error."""


@dataclass(slots=True)
class Answered:
    """A plain chunk's columns: what :meth:`ReportWriter.record` would write and count."""

    source_file: str
    source_rows: list[int]
    lines: Any
    """The ``results.csv`` lines: their text when no cell needs quoting, else an iterator
    over tuples, for ``writerows``."""
    statuses: list[RowStatus]
    record_ids: list[int]
    owners: list[str | None]


def answered_columns(
    step: str, rows: Sequence[Any], results: Sequence[Any]
) -> Answered | None:
    """The lines and counts of ``rows`` (all sent) with their ``results`` (``EntryResult``),
    when every row is the plain case; None otherwise (nothing is changed)."""
    n = len(rows)
    if not n or len(results) != n or set(map(type, rows)) != {PreparedRow}:
        return None
    if set(map(_row_status, rows)) != {RowStatus.VALID} or any(map(_suggestions, rows)):
        return None
    statuses = list(map(_status, results))
    if not set(statuses) <= _ANSWERED or set(map(_error, results)) != {None}:
        return None
    record_ids = list(map(_record_id, results))
    if set(map(type, record_ids)) != {int}:
        return None
    sources = list(map(_source, rows))
    files = set(map(_source_file, sources))
    payloads = list(map(_payload, rows))
    if len(files) != 1 or set(map(type, payloads)) != {dict}:
        return None
    if not all(map(dict.__contains__, payloads, repeat("match_by"))):
        return None
    bys = list(map(_match_by, payloads))
    values: list[Any] = list(map(dict.get, payloads, repeat("match_value")))
    types = set(map(type, values))
    if set(map(type, bys)) != _STR or not types <= _STR_OR_INT:
        return None
    texts: list[str] = values if types <= _STR else list(map(str, values))  # as _cell does
    if any(map(str.startswith, map(str.lstrip, texts, repeat("'")), repeat(TRIGGERS))):
        texts = list(map(neutralise, texts))
    (source_file,) = files
    source_rows = list(map(_source_row, sources))
    head = (neutralise(step), neutralise(source_file))
    if plain("".join(chain(head, bys, texts))):  # nothing to quote: the text at once
        cells = (source_rows, bys, texts, statuses, record_ids)
        lines: Any = "".join(
            map(_LINE.__mod__, zip(repeat(f"{head[0]},{head[1]},", n), *cells, strict=True))
        )
        return Answered(
            source_file, source_rows, lines, statuses, record_ids, list(map(_owner, rows))
        )
    lines = zip(
        repeat(head[0], n),
        repeat(head[1], n),
        source_rows,
        bys,
        texts,
        map(str, statuses),  # a StrEnum: its value
        map(str, record_ids),
        repeat("", n),
        strict=True,
    )
    return Answered(source_file, source_rows, lines, statuses, record_ids, list(map(_owner, rows)))


def record_answered(
    writer: ReportWriter, tally: StepTally, rows: Sequence[Any], results: Sequence[Any]
) -> bool:
    """:meth:`ReportWriter.record` of each of a chunk's rows, all sent, with its
    ``EntryResult``, as one block when every row is plain (:func:`answered_columns`); False
    (nothing written) otherwise: the caller records them one by one. (Part of the writer,
    kept here: report/writer.py is at its size ceiling.)"""
    block = answered_columns(tally.step, rows, results)
    if block is None:
        return False
    if type(block.lines) is str:
        writer._results_file.write(block.lines)
    else:
        writer._results.writerows(block.lines)
    writer.wrote(len(rows))
    tally.outcomes.update(block.statuses)
    present = cast(list[str], block.owners)
    if None in block.owners:
        present = [r for r in block.owners if r is not None]
    tally.owners.update(map(OWNER_OUTCOMES.get, present, present))  # in C, in row order
    first_row = writer._record_rows.setdefault
    if RowStatus.UPDATED in block.statuses:
        for row, status, rid in zip(rows, block.statuses, block.record_ids, strict=True):
            if status is RowStatus.UPDATED:
                writer._note_merge(tally, row, rid)
            else:
                first_row(rid, (row.source.source_row, None))
    else:  # at once when none of these records is known yet (records just created)
        rows_of = list(zip(block.source_rows, repeat(None)))
        writer._record_rows.setdefault_many(block.record_ids, rows_of)
    return True

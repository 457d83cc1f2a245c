"""Malformed lines as rows: reported ``invalid``, with the keys they may still hold.

Unreadable is not absent: with mirror deletes on, a line that could not be read as a row
must keep its record. A line with cells too many (an extra delimiter)
still holds its key, but the cells after the fault are shifted by an unknown place, and the
key cell itself may be split, so the key column's value is one of a few cells or joins of
neighbouring cells. :func:`bad_row` reads the line under every alignment its cell count
allows and keeps the match key of each: all of them count as present (keeping a record too
many is safe, deleting one is not). A line that may hide rows or a key (a quote that
swallowed lines, cells too few: a missing delimiter merged two cells, more than twice as many
cells as columns, more than :data:`MAX_SHIFT` cells too many, cells that cannot be split)
carries the reason in ``salvage.hides``: the step's mirror deletes are skipped. So does a
line whose match key (or ledger key) holds U+FFFD (a byte the source's encoding does not
define): its key cannot be read as it was meant.
"""

from __future__ import annotations

import csv
from typing import Any

import pyarrow as pa

from recordsync.core.model import PreparedRow, RowStatus, Salvage, SourceRow
from recordsync.map.engine import BatchMapper
from recordsync.read import BadLine

MAX_SHIFT = 8
"""More cells too many than this: the line's key is not guessed (``hides``)."""


def _cells(text: str, delimiter: str, quotechar: str | None) -> list[str] | str:
    """The cells of one malformed line, or why they cannot be split."""
    if not text:
        return []
    try:
        if quotechar is None:
            reader = csv.reader([text], delimiter=delimiter, quoting=csv.QUOTE_NONE)
        else:
            reader = csv.reader([text], delimiter=delimiter, quotechar=quotechar)
        return next(reader)
    except csv.Error as exc:  # e.g. a cell over the csv module's 128 KiB field limit
        return f"its cells cannot be split ({exc})"
    except StopIteration:
        return []


def _alignments(
    cells: list[str], columns: list[str], delimiter: str
) -> list[dict[str, Any]] | str:
    """Every reading of ``cells`` (more than ``columns``) the line's fault allows, or why none
    can be trusted. With d cells too many, column j's true value is the join of cells
    ``[j + s, j + s + w)`` for some shift s and width w with s + w <= d + 1 (a delimiter
    added before the column shifts it; one added inside it splits it)."""
    n, m = len(cells), len(columns)
    d = n - m
    if d < 0:
        return (
            f"it has {n} cells for {m} columns: a delimiter is missing, so its key may be"
            " merged with another cell"
        )
    if m > 1 and n >= 2 * m:
        return f"it has {n} cells for {m} columns: it may hold more than one row"
    if d > MAX_SHIFT:
        return f"it has {n} cells for {m} columns: its key cannot be told apart"
    return [
        {c: delimiter.join(cells[j + s : j + s + w]) for j, c in enumerate(columns)}
        for w in range(1, d + 2)
        for s in range(d + 2 - w)
    ]


def _unread_key(
    aligned: list[dict[str, Any]], keys: list[str | None], mapper: BatchMapper
) -> str | None:
    """Why the line's key cannot be trusted (it holds U+FFFD), or None."""
    if any(k is not None and "\ufffd" in k for k in keys):
        return "its match key holds a character that could not be read"
    spec = mapper.mapping.ledger_key
    if spec is not None and any("\ufffd" in str(a.get(spec.column) or "") for a in aligned):
        return f"its ledger key column {spec.column!r} holds a character that could not be read"
    return None


def bad_row(
    bl: BadLine, file: str, columns: list[str], mapper: BatchMapper | None = None
) -> PreparedRow:
    """The ``invalid`` row of malformed line ``bl``, with its salvage (keys by ``mapper``,
    cells split by its source's delimiter and quote)."""
    src = mapper.mapping.source if mapper is not None else None
    cells = _cells(bl.text, src.delimiter if src else ",", src.quotechar if src else '"')
    error = f"line {bl.line}: {bl.message}"
    if isinstance(cells, str):
        values: dict[str, Any] = {"_line": bl.text[:200]}
        error += f"; {cells}: fix the quoting of line {bl.line} in the source"
        salvage = Salvage([], [], f"line {bl.line}: {cells}")
        return PreparedRow(
            SourceRow(file, bl.line, values), RowStatus.INVALID, error=error, salvage=salvage
        )
    values = dict(zip(columns, cells, strict=False))
    if len(cells) > len(columns):
        values["_extra_cells"] = cells[len(columns) :]
    row = PreparedRow(SourceRow(file, bl.line, values), RowStatus.INVALID, error=error)
    if mapper is not None and not mapper.mapping.mirror_deletes.enabled:
        return row  # only mirror deletes use the salvage
    if bl.hides is not None:
        row.salvage = Salvage([], [], bl.hides)
        return row
    aligned = _alignments(cells, columns, src.delimiter if src else ",")
    if isinstance(aligned, str):
        row.salvage = Salvage([], [], f"line {bl.line}: {aligned}")
        return row
    keys: list[str | None] = [None] * len(aligned)
    if mapper is not None and mapper.mapping.match_by and columns:
        batch = pa.RecordBatch.from_pydict(
            {c: pa.array([a[c] for a in aligned], pa.string()) for c in columns}
        )
        keys = mapper.keys_only(batch)
    unread = _unread_key(aligned, keys, mapper) if mapper is not None else None
    if unread is not None:
        row.salvage = Salvage([], [], f"line {bl.line}: {unread}")
        return row
    row.salvage = Salvage(aligned, keys)
    return row

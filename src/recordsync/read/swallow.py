"""Quoted fields that swallowed lines: one stray quote makes every line up to the next quote
(or the end of the file) part of one cell, so the rows on those lines would vanish into it.

A quoted field is not read as the value it parses as when it swallowed what looks like rows
(a line break in it followed by a line holding at least the header's number of delimiters:
:func:`looks_like_rows`), or when it spans more physical lines than
``source.max_quoted_lines`` or lines of more bytes than ``source.max_quoted_bytes``. The
reader then stops at the line where the record starts (:func:`first_swallow`): that line is
reported ``invalid`` with :func:`reason` (naming the stray quote), and the file is read again
from the next line, so every line after it is a row of its own (or malformed for its own
reason). Every physical data line is accounted for.

A multi-line field within the limits whose lines do not look like rows is read as the cell it
parses as (an address with line breaks).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.read.batch import BadLine, may_contain


@dataclass(frozen=True, slots=True)
class Swallow:
    """Line ``line`` starts a record the reader does not take: a quoted field in it swallowed
    a line that looks like a row (``kind`` "rows", ``other`` is that line), is over the limits
    ("limits", spanning ``other`` lines of ``size`` bytes), or runs on beyond the parser's
    largest block ("long")."""

    line: int
    kind: Literal["rows", "limits", "long"]
    other: int = 0
    size: int = 0


def _over(lines: int, size: int, src: SourceConfig) -> bool:
    return lines > src.max_quoted_lines or (lines > 1 and size > src.max_quoted_bytes)


def looks_like_rows(cells: list[str], start: int, ncols: int, delimiter: str) -> int | None:
    """The first line (by number; the record starts at line ``start``) that follows a line
    break inside one of ``cells`` and holds, up to the next line break or the end of that
    cell, at least the header's number of delimiters (``ncols - 1``, at least one); None
    when there is none."""
    need = max(1, ncols - 1)
    line = start
    for cell in cells:
        if "\n" not in cell:
            continue
        parts = cell.split("\n")
        for j, part in enumerate(parts[1:], 1):
            if part.count(delimiter) >= need:
                return line + j
        line += len(parts) - 1
    return None


def _text_cells(text: str, src: SourceConfig) -> list[str]:
    """The cells of a malformed record's text (its physical lines when they cannot be
    split: every line after the first then counts as the text after a line break)."""
    try:
        if src.quotechar is None:
            reader = csv.reader(
                io.StringIO(text, newline=""),
                delimiter=src.delimiter,
                quoting=csv.QUOTE_NONE,
                escapechar=src.escapechar,
            )
        else:
            reader = csv.reader(
                io.StringIO(text, newline=""),
                delimiter=src.delimiter,
                quotechar=src.quotechar,
                escapechar=src.escapechar,
                doublequote=src.escapechar is None,
            )
        return next(reader, [])
    except csv.Error:
        return [text.replace("\r\n", "\n")]


def _check(
    start: int, cells: list[str], breaks: int, size: int, ncols: int, src: SourceConfig
) -> Swallow | None:
    if _over(breaks + 1, size, src):
        return Swallow(start, "limits", breaks + 1, size)
    hit = looks_like_rows([c.replace("\r\n", "\n") for c in cells], start, ncols, src.delimiter)
    return Swallow(start, "rows", hit) if hit is not None else None


def first_swallow(
    batch: pa.RecordBatch,
    lines: npt.NDArray[np.int64],
    newlines: npt.NDArray[np.int64],
    bad: list[BadLine],
    src: SourceConfig,
) -> Swallow | None:
    """The first record of a parsed block (by line) that must not be taken as it parses.

    ``lines[i]`` is the first line of row ``i`` of ``batch`` and ``newlines[i]`` the line
    breaks its cells hold; ``bad`` are its malformed lines (their raw text)."""
    ncols = batch.num_columns
    found: list[tuple[int, int, int]] = []  # (line, 0: bad line / 1: row, index)
    found += [(b.line, 0, k) for k, b in enumerate(bad) if "\n" in b.text]
    found += [(int(lines[i]), 1, int(i)) for i in np.flatnonzero(newlines > 0).tolist()]
    if not found:
        return None
    found.sort()
    for line, what, k in found:
        if what == 0:
            text = bad[k].text.rstrip("\r\n")
            if "\n" not in text:
                continue
            size = len(text.encode("utf-8", "surrogatepass"))
            hit = _check(line, _text_cells(text, src), text.count("\n"), size, ncols, src)
        else:
            row = batch.slice(k, 1)
            cells = ["" if c is None else str(c) for c in row.to_pylist()[0].values()]
            size = 0
            for col in row.columns:
                if pa.types.is_string(col.type):
                    size += int(pc.sum(pc.binary_length(col)).as_py() or 0)
            hit = _check(line, cells, int(newlines[k]), size, ncols, src)
        if hit is not None:
            return hit
    return None


def size_text(size: int) -> str:
    """``64 MiB`` (whole MiB), else ``1,024 bytes``."""
    return f"{size >> 20} MiB" if size >= 1 << 20 and not size % (1 << 20) else f"{size:,} bytes"


def reason(
    sw: Swallow, quote: tuple[int, int] | None, size: int, src: SourceConfig, max_block: int
) -> str:
    """Why line ``sw.line`` is ``invalid`` (``quote``: where on it the quoted field that
    stays open starts, :func:`recordsync.read.csv_lines.stray_quote`; ``size``: the
    line's length in bytes)."""
    at = (
        f"the quote at character {quote[0]} (cell {quote[1]}) opens a quoted field"
        if quote is not None
        else "a quote on it opens a quoted field"
    )
    after = "the lines after it are read as rows of their own"
    fix = f'fix the quoting of line {sw.line} (a quote inside a cell is written twice: "")'
    if sw.kind == "rows":
        return (
            f"unbalanced quote: {at} that runs on over the next lines, and line {sw.other}"
            f" in it looks like a row; this line is not read, {after}: {fix}"
        )
    if sw.kind == "limits":
        return (
            f"unbalanced quote: {at} that spans {sw.other} lines ({sw.size} bytes), more than"
            f" source.max_quoted_lines {src.max_quoted_lines} or source.max_quoted_bytes"
            f" {src.max_quoted_bytes}; this line is not read, {after}: {fix}, or raise those"
            " limits if the field is meant to be that long"
        )
    limit = size_text(max_block)
    if size >= max_block:
        return (
            f"line too long: the line is {size:,} bytes, more than the {limit} a row of a CSV"
            f" source may have; this line is not read, {after}: shorten or split line"
            f" {sw.line} in the source"
        )
    return (
        f"unbalanced quote: {at} that runs on for more than {limit} (the most a row of a CSV"
        f" source may have); this line is not read, {after}: {fix}"
    )


def hiding_rows(
    batch: pa.RecordBatch, lines: npt.NDArray[np.int64], delimiter: str
) -> dict[int, str]:
    """Rows (by first line) read whole whose multi-line cell holds a line that looks like a
    row (at least as many delimiters as a row has). The reader reads no such row whole
    (:func:`first_swallow`); this stays a guard for mirror deletes, which such a row stops."""
    need = max(1, batch.num_columns - 1)
    out: dict[int, str] = {}
    for col in batch.columns:
        if not pa.types.is_string(col.type) or not may_contain(col, "\n"):
            continue
        hits = pc.fill_null(pc.match_substring(col, "\n"), False)
        for i in np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist():
            cell = str(col[i].as_py())
            for j, part in enumerate(cell.split("\n")[1:], 1):
                if part.count(delimiter) >= need and int(lines[i]) not in out:
                    start = int(lines[i])
                    out[start] = (
                        f"line {start}: a quoted field holds line {start + j}, which looks like"
                        " a row (unbalanced quote?)"
                    )
    return out

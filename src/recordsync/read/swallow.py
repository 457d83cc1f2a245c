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

A quoted field within the limits still open where the file ends, when the file has no line
ending there, is no stray quote to split at: the file was cut inside that field (an export
cut short, or still being written). The record, from its first line to the file's end, is
one malformed line (:func:`first_swallow`, kind "cut"): no line of the cut field is read as a
row, even one that looks like a row, and it stops the step's mirror deletes. With a line
ending at the file's end a cut cannot be told from a stray quote: the field is split as
above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.read.batch import BadLine, may_contain
from recordsync.read.integrity import ENDS_MID_LINE, scan_record


@dataclass(frozen=True, slots=True)
class Swallow:
    """Line ``line`` starts a record the reader does not take: a quoted field in it swallowed
    a line that looks like a row (``kind`` "rows", ``other`` is that line), is closed by a
    quote not followed by a delimiter ("close", on line ``other``), is never closed ("end"),
    is over the limits ("limits", spanning ``other`` lines of ``size`` bytes), or runs on
    beyond the parser's largest block ("long"); or the file ends inside it without a line
    ending ("cut": the record is the file's last, lines ``line`` to ``other``, ``size`` bytes,
    its raw ``text``)."""

    line: int
    kind: Literal["rows", "close", "end", "limits", "long", "cut"]
    other: int = 0
    size: int = 0
    text: str = ""


def _over(lines: int, size: int, src: SourceConfig) -> bool:
    return lines > src.max_quoted_lines or (lines > 1 and size > src.max_quoted_bytes)


SCAN_MAX = 1 << 20
"""At most this much of a record's text is scanned for lines that look like rows."""


def scan(text: str, start: int, ncols: int, src: SourceConfig) -> Swallow | None:
    """Whether the raw ``text`` of a record starting at line ``start`` swallowed lines: a
    quoted field in it holds a line break followed by at least the header's number of
    delimiters (``ncols - 1``, at least one) before the next line break or its closing
    quote ("rows", with that line), or a quote closes a field that spans lines and is
    followed by something other than a delimiter or a line end, or a quote inside an unquoted
    cell after such a field ("close": not how quoted values end, but how a stray quote meets
    the next quote)."""
    q, d, esc = src.quotechar, src.delimiter, src.escapechar
    if q is None:
        return None
    need = max(1, ncols - 1)
    line, quoted, at_start, spans = start, False, True, False
    count = -1  # delimiters since the last line break inside a quoted field (-1: none)
    i, n = 0, min(len(text), SCAN_MAX)
    while i < n:
        ch = text[i]
        if quoted:
            if esc is not None and ch == esc:
                i += 2
                continue
            if ch == q and esc is None and i + 1 < n and text[i + 1] == q:
                i += 2
                continue
            if ch == q:
                quoted = False
                if count >= need:
                    return Swallow(start, "rows", line)
                after = text[i + 1] if i + 1 < len(text) else ""
                if spans and after not in (d, "\r", "\n", ""):
                    return Swallow(start, "close", line)
                count = -1
            elif ch == "\n":
                if count >= need:
                    return Swallow(start, "rows", line)
                line, count, spans = line + 1, 0, True
            elif ch == d and count >= 0:
                count += 1
        elif ch == d:
            at_start = True
            i += 1
            continue
        elif ch == "\n":
            line += 1
            spans = False
        elif ch == q and at_start:
            quoted, spans, count = True, False, -1
        elif ch == q and line > start:  # a quote inside a cell, after a quoted line break
            return Swallow(start, "close", line)
        at_start = False
        i += 1
    if quoted and count >= need:  # the record ends inside the field (the end of the file)
        return Swallow(start, "rows", line)
    if quoted and n == len(text) and line > start:
        return Swallow(start, "end", line)
    return None


def _never() -> bool:
    return False


def first_swallow(
    batch: pa.RecordBatch,
    lines: npt.NDArray[np.int64],
    newlines: npt.NDArray[np.int64],
    bad: list[BadLine],
    src: SourceConfig,
    raw: Callable[[int, int], str],
    unended: Callable[[], bool] = _never,
) -> Swallow | None:
    """The first record of a parsed block (by line) that must not be taken as it parses.

    ``lines[i]`` is the first line of row ``i`` of ``batch`` and ``newlines[i]`` the line
    breaks its cells hold; ``bad`` are its malformed lines (their raw text); ``raw(line,
    count)`` is the raw text of ``count`` lines from ``line`` (asked in line order) and
    ``unended()`` whether the lines it returned last run to the file's end, which has no line
    ending after them (:meth:`recordsync.read.csv_lines.RawLines.unended`)."""
    ncols = batch.num_columns
    found: list[tuple[int, int, int]] = []  # (line, 0: bad line / 1: row, index)
    found += [(b.line, 0, k) for k, b in enumerate(bad) if "\n" in b.text.rstrip("\r\n")]
    if not src.own_file:  # recordsync's own file: its multi-line cells are cells
        found += [(int(lines[i]), 1, int(i)) for i in np.flatnonzero(newlines > 0).tolist()]
    found.sort()
    for line, what, k in found:
        # only the file's last record can end inside a quoted field: a cut when the file ends
        # after its lines mid-line (a bad line's text leaves its line ending out: its lines
        # are read to tell)
        if what == 0:
            text = bad[k].text.rstrip("\r\n")
            open_end = scan_record(text, src)[0]
            if open_end:
                raw(line, text.count("\n") + 1)
        else:
            text = raw(line, int(newlines[k]) + 1)
            open_end = unended() and scan_record(text, src)[0]
        cut = open_end and unended()
        size = len(text.encode("utf-8", "surrogatepass"))
        if cut and not _over(text.count("\n") + 1, size, src):
            return Swallow(line, "cut", line + text.count("\n"), size, text)
        hit = scan(text, line, ncols, src)
        if hit is not None:
            return hit
        if _over(text.count("\n") + 1, size, src):
            return Swallow(line, "limits", text.count("\n") + 1, size)
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
    if sw.kind == "close":
        return (
            f"unbalanced quote: {at} that runs on over the next lines, to a quote on line"
            f" {sw.other} that is not followed by a delimiter; this line is not read, {after}:"
            f" {fix}"
        )
    if sw.kind == "end":
        return f"unbalanced quote: {at} that is never closed; this line is not read, {after}: {fix}"
    if sw.kind == "cut":
        return (
            f"cut short: {at} that is still open where the file ends, on line {sw.other},"
            f" without a line ending: {ENDS_MID_LINE}; lines {sw.line} to {sw.other} are this"
            " one record and none of them is read as a row: run again once the export is"
            f" complete (if the quote is a stray one, fix the quoting of line {sw.line}: a quote"
            ' inside a cell is written twice: "")'
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

"""Quoted fields that swallowed lines: one stray quote makes every line up to the next quote
(or the end of the file) part of one cell, so the rows on those lines vanish into it.

A quoted field spanning more physical lines than ``source.max_quoted_lines``, or lines of more
bytes than ``source.max_quoted_bytes``, is not read as the one row (valid or malformed) it
parses as: its first line and every line it swallowed become malformed lines of their own
(:class:`BadLine`, with the line's text), each saying where the field started, so that the
report has a line for every physical data line and mirror deletes know that rows may hide
in it (``hides``). Blank lines inside the field stay blank lines (counted, not reported).

A multi-line field within the limits is read as the cell it parses as; :func:`hiding_rows`
finds those holding a line that looks like a row, for mirror deletes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.read.batch import BadLine, may_contain


def _message(start: int, spans: int, size: int, src: SourceConfig) -> str:
    return (
        f"a quoted field that starts at line {start} spans {spans} lines ({size} bytes), more"
        f" than source.max_quoted_lines {src.max_quoted_lines} or source.max_quoted_bytes"
        f" {src.max_quoted_bytes}: unbalanced quote? Fix the quoting at line {start}, or raise"
        " those limits if the field is meant to be that long"
    )


def inside(start: int) -> str:
    """The reason given to a line swallowed by the quoted field that started at ``start``."""
    return f"unreadable: inside a quoted field that started at line {start} (unbalanced quote?)"


def _split(start: int, text: str, size: int, src: SourceConfig) -> list[BadLine]:
    """The physical lines of ``text`` (a record starting at line ``start``) as bad lines."""
    pieces = text.split("\n")
    spans = len(pieces) - (pieces[-1] in ("", "\r"))  # a line break ending the field's text
    hides = f"a quoted field that starts at line {start} swallowed {spans - 1} lines"
    out = [BadLine(start, pieces[0].rstrip("\r"), _message(start, spans, size, src), hides)]
    for j, piece in enumerate(pieces[1:], 1):
        piece = piece.rstrip("\r")
        if piece:  # a blank line stays a blank line
            out.append(BadLine(start + j, piece, inside(start), hides))
    return out


def _over(lines: int, size: int, src: SourceConfig) -> bool:
    return lines > src.max_quoted_lines or (lines > 1 and size > src.max_quoted_bytes)


def split_swallowed(
    batch: pa.RecordBatch,
    lines: npt.NDArray[np.int64],
    newlines: npt.NDArray[np.int64],
    bad: list[BadLine],
    src: SourceConfig,
) -> tuple[npt.NDArray[np.bool_] | None, list[BadLine]]:
    """Rows and malformed lines of a parsed block whose quoted fields swallowed lines.

    ``lines[i]`` is the first line of row ``i`` of ``batch`` and ``newlines[i]`` the line
    breaks its cells hold. Returns the rows to keep (None: all of them) and the malformed
    lines, the swallowing ones split into their physical lines, in line order."""
    keep: npt.NDArray[np.bool_] | None = None
    out: list[BadLine] = []
    for b in bad:
        breaks = b.text.count("\n")
        size = len(b.text.encode("utf-8", "surrogatepass"))
        if breaks and _over(breaks + 1, size, src):
            out += _split(b.line, b.text, size, src)
        else:
            out.append(b)
    multi = np.flatnonzero(newlines > 0)
    if len(multi):
        sub = batch.take(pa.array(multi, pa.int64()))
        sizes = np.zeros(len(multi), dtype=np.int64)
        for col in sub.columns:
            if pa.types.is_string(col.type):
                sizes += pc.binary_length(col).to_numpy(zero_copy_only=False)
        for k, i in enumerate(multi.tolist()):
            if not _over(int(newlines[i]) + 1, int(sizes[k]), src):
                continue
            if keep is None:
                keep = np.ones(batch.num_rows, dtype=bool)
            keep[i] = False
            cells = ["" if c is None else str(c) for c in sub.slice(k, 1).to_pylist()[0].values()]
            out += _split(int(lines[i]), src.delimiter.join(cells), int(sizes[k]), src)
    if keep is not None or len(out) != len(bad):
        out.sort(key=lambda x: x.line)
    return keep, out


def hiding_rows(
    batch: pa.RecordBatch, lines: npt.NDArray[np.int64], delimiter: str
) -> dict[int, str]:
    """Rows (by first line) read whole whose multi-line cell holds a line that looks like a
    row (at least as many delimiters as a row has): a quote may have swallowed rows even
    within the limits above. Found for mirror deletes, which such a row stops; the row itself
    is read as it parses."""
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

"""Whether a file source was read whole. Mirror deletes rely on it: a row missing from what
was read is taken for a row that left the source, and its record is deleted.

- A file that changes while a step reads it (an export still being written, or replaced):
  :func:`stamp_source` notes the size and modification time of each file of the source as
  the step begins, :func:`changes` says what differs before the step's deletes
  (:mod:`recordsync.nightly.hook` skips them then). Local files: ``os.stat`` (size,
  modification time in ns); object storage: the size and last-modified time the storage
  reports (pyarrow exposes no ETag or version: an object replaced by one of the same size
  within the storage's time resolution goes unnoticed). A Parquet directory or glob also
  notices a file that appears or goes.
- A CSV file that ends mid-line (:func:`guard_last_line`, on every read of a CSV source): when
  the file does not end with a line ending, its last record is checked. With fewer cells than
  the columns, or ending inside a quoted field, it was cut short: it is (or becomes) a
  malformed line, reported and never sent with a cut value, whose ``hides`` stops the step's
  mirror deletes. A quoted field that opened on an earlier line and is still open where the
  file ends without a line ending is found by the reader (:mod:`.swallow`, kind "cut"): the
  record, every line of it, is one such malformed line (its ``hides`` from :func:`cut_hides`)
  and no line of the cut cell becomes a row. A last line without a line ending that is
  otherwise complete is read as it is: many exports end so, and a cut inside an unquoted
  last cell, or one that falls on a line ending, cannot be told from a whole file. A
  compressed file (``.gz``...) is not checked so (a cut stream fails to decompress); nor is
  the quoting of a UTF-16/UTF-32 file's last row.
- A Parquet file whose footer is missing is named as cut short by its reader
  (:func:`recordsync.read.parquet_reader.cut_short`).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.batch import BadLine, SourceBatch, may_contain
from recordsync.read.paths import locate
from recordsync.read.remote import read_range, stat_files

Stamp = tuple[int, int | None] | None
"""A file's ``(size in bytes, modification time in ns or None)``; None: not there."""

ENDS_MID_LINE = "the file ends mid-line (cut short, or still being written)"
"""In every reason this module gives for a cut-short file (the skip's next step differs)."""

_TAIL = 64 << 10  # bytes read from a file's end at a time to find its last record


def file_stamps(paths: list[Path | str]) -> list[Stamp]:
    """The :data:`Stamp` of each file (a URI: object storage, :func:`.remote.stat_files`)."""
    remote = [p for p in paths if isinstance(p, str)]
    found = dict(zip(remote, stat_files(remote), strict=True))
    out: list[Stamp] = []
    for p in paths:
        if isinstance(p, str):
            out.append(found[p])
            continue
        try:
            st = os.stat(p)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns))
    return out


def stamp_source(src: SourceConfig, base_dir: Path) -> dict[str, Stamp]:
    """The :data:`Stamp` of each file of a file source, by the name reports give it (a SQL
    source: none). A source that cannot be found has none (its reader says why)."""
    files: list[Path | str]
    if src.kind == "sql":
        return {}
    if src.kind == "parquet":
        # imported when used, as the reader is (a CSV run never needs pyarrow.parquet)
        from recordsync.read.parquet_reader import parquet_files

        try:
            files = parquet_files(src, base_dir)
        except SourceError:
            return {}
    else:
        files = [locate(base_dir, src.path)]
    return dict(zip(map(str, files), file_stamps(files), strict=True))


def _when(ns: int | None) -> str:
    if ns is None:
        return "unknown"
    moment = datetime.fromtimestamp(ns / 1e9, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def changes(before: dict[str, Stamp], after: dict[str, Stamp]) -> list[str]:
    """What differs between two :func:`stamp_source` s, a phrase per file (none: nothing)."""
    out: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        if now is None:
            out.append(f"{name} is gone" if was is not None else f"{name} is not there")
        elif was is None:
            out.append(f"{name} appeared")
        else:
            parts = []
            if was[0] != now[0]:
                parts.append(f"its size went from {was[0]:,} to {now[0]:,} bytes")
            if was[1] != now[1]:
                parts.append(f"it was modified at {_when(now[1])} (before: {_when(was[1])})")
            out.append(f"{name}: {' and '.join(parts)}")
    return out


def _compressed(path: Path | str) -> bool:
    """Read through a decompressor (as :func:`pyarrow.input_stream` detects it)."""
    try:
        pa.Codec.detect(str(path))
    except (TypeError, ValueError, pa.ArrowException):
        return False
    return True


def _read(path: Path | str, start: int, size: int) -> bytes:
    if isinstance(path, str):
        return read_range(path, start, size)
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(size)


def guard_last_line(
    src: SourceConfig, path: Path | str, batches: Iterator[SourceBatch]
) -> Iterator[SourceBatch]:
    """``batches`` (a CSV read of ``path``), the last record checked when the file does not
    end with a line ending (see the module docstring); the last batch with rows or malformed
    lines is held back until the read ends. A file that changed during the read is not
    checked here (its tail is no longer what was read): the step's :func:`changes` say so."""
    try:
        (before,) = file_stamps([path])
        size = before[0] if before is not None else 0
        last = _read(path, size - 1, 1) if size and not _compressed(path) else b"\n"
    except (OSError, SourceError):  # the reader says why it cannot read the file
        last = b"\n"
        before = None
    if last in (b"\n", b"\r", b""):
        yield from batches
        return
    held: list[SourceBatch] = []
    try:
        for sb in batches:
            if len(sb.rows) or sb.bad:
                yield from held
                held = [sb]
            else:  # kept behind the batch it follows
                held.append(sb)
        if held and file_stamps([path])[0] == before:
            held[0] = _checked(held[0], src, path, size)
        yield from held
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def scan_record(text: str, src: SourceConfig) -> tuple[bool, int]:
    """``(ends inside a quoted field, cells)`` of one record's text, parsed as pyarrow parses
    it: a quote opens a field only at its start; inside, a doubled quote (or the escape
    character) stands for a quote. A record that ends inside a quoted field ends where the
    file does (:mod:`.swallow` makes one that spans lines, at a file's end without a line
    ending, one malformed line: its kind "cut")."""
    delim, quote, escape = src.delimiter, src.quotechar, src.escapechar
    doubled = escape is None
    cells, quoted, at_start, i, n = 1, False, True, 0, len(text)
    while i < n:
        c = text[i]
        if quoted:
            if c == escape:
                i += 2
                continue
            if c == quote:
                if doubled and i + 1 < n and text[i + 1] == quote:
                    i += 2
                    continue
                quoted = False
            i += 1
            continue
        if at_start and c == quote:
            quoted, at_start = True, False
        elif c == escape:
            at_start = False
            i += 1
        elif c == delim:
            cells, at_start = cells + 1, True
        else:
            at_start = False
        i += 1
    return quoted or i > n, cells


def _cut(text: str, columns: int, src: SourceConfig) -> str | None:
    """How a last record without a line ending shows it was cut short, or None."""
    open_quote, cells = scan_record(text, src)
    if open_quote:
        return "ends inside a quoted field"
    if cells < columns:
        return f"has {cells} of {columns} cells"
    return None


def cut_hides(file: str, line: int, why: str, last: int | None = None) -> str:
    """The ``hides`` of a file's last record, on line ``line`` (to line ``last``), that has no
    line ending and was cut short (``why``: how it shows it)."""
    lines = f"line {line}" if last is None or last == line else f"lines {line} to {last}"
    return f"{file}: its last record ({lines}) has no line ending and {why}: {ENDS_MID_LINE}"


def _checked(sb: SourceBatch, src: SourceConfig, path: Path | str, size: int) -> SourceBatch:
    """``sb`` (the file's last rows), its last record made a malformed line that stops
    mirror deletes when it was cut short."""
    columns = sb.batch.num_columns
    last_row = int(sb.rows[-1]) if len(sb.rows) else 0
    at = max(range(len(sb.bad)), key=lambda i: sb.bad[i].line, default=None)
    if at is not None and sb.bad[at].line > last_row:  # the last record is malformed
        bl = sb.bad[at]
        why = _cut(bl.text, columns, src) if bl.hides is None else None
        if why is None:  # complete (cells too many), or already stopping the deletes
            return sb
        bad = list(sb.bad)
        message = f"{bl.message}; the file's last record, without a line ending: {ENDS_MID_LINE}"
        bad[at] = BadLine(bl.line, bl.text, message, cut_hides(sb.file, bl.line, why))
        return SourceBatch(sb.file, sb.batch, sb.rows, bad)
    if not len(sb.rows) or src.quotechar is None:
        return sb
    text = _last_record(sb, src, path, size)
    why = _cut(text, columns, src) if text is not None else None
    if text is None or why is None:
        return sb
    n = len(sb.rows) - 1
    message = f"the file's last record has no line ending and {why}: {ENDS_MID_LINE}"
    cut = BadLine(last_row, text, message, cut_hides(sb.file, last_row, why))
    return SourceBatch(sb.file, sb.batch.slice(0, n), sb.rows[:n], [*sb.bad, cut])


def _last_record(sb: SourceBatch, src: SourceConfig, path: Path | str, size: int) -> str | None:
    """The text of the file's last record, read from its end: the last row of ``sb`` spans
    as many lines as its cells hold line breaks, plus one. None when it cannot be told (an
    encoding that is not ASCII-compatible; a blank last line, which is no row)."""
    try:
        encoding = codecs.lookup(src.encoding).name
    except LookupError:
        return None
    encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    if "\n".encode(encoding, errors="replace") != b"\n":  # UTF-16, UTF-32
        return None
    last = sb.batch.slice(sb.batch.num_rows - 1, 1)
    breaks = 0
    for col in last.columns:
        if pa.types.is_string(col.type) and may_contain(col, "\n"):
            breaks += int(pc.sum(pc.count_substring(col, "\n")).as_py() or 0)
    step = _TAIL
    while True:
        start = max(0, size - step)
        data = _read(path, start, size - start)
        pos = len(data)
        for _ in range(breaks + 1):  # the line break before the record's first line
            pos = data.rfind(b"\n", 0, pos)
            if pos < 0:
                break
        if pos < 0 and start > 0:
            step *= 4
            continue
        text = data[pos + 1 :].decode(encoding, errors="replace")
        tail = text.rsplit("\n", 1)[-1]  # a row of empty cells is skipped as a blank line
        blank = not tail.strip().strip(src.delimiter + (src.quotechar or "")).strip()
        return None if blank else text

"""Stream a CSV file as string record batches with exact physical line numbers.

pyarrow parses serially (``use_threads=False``) so that its invalid-row callback knows each
record's ordinal; line numbers are then derived from record ordinals plus the newlines that
quoted cells (and malformed lines) contain. Blank lines are skipped but counted. The blocks
are parsed in :mod:`recordsync.read.csv_blocks`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import xxhash

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.batch import BadLine, SourceBatch
from recordsync.read.csv_blocks import (
    BLOCK_SIZE,
    NotUtf8,
    Progress,
    csv_options,
    iter_blocks,
    open_file,
)
from recordsync.read.csv_lines import Mark, Opened, Undefined, is_utf8, open_at, stray_quote
from recordsync.read.integrity import cut_hides
from recordsync.read.paths import locate
from recordsync.read.swallow import Swallow, reason, size_text
from recordsync.read.utf8guard import guard, not_utf8_error

MAX_BLOCK_SIZE = 64 << 20  # rows up to this size are read (the block grows to fit them)
CHECK_BLOCK_SIZE = 4 << 20  # what check_source parses up front (encoding errors, quoting)
HEADER_BLOCK_SIZE = 64 << 10  # enough for the header row; parsing a whole block is wasted work


_CHECKED: dict[tuple[str, bytes, str], list[str]] = {}
"""Header names of sources whose first block was checked (:func:`read_header`), by the
file, a digest of the bytes the check parses and the source's settings: a run checks its
sources before it starts, again as each step begins, and reads each one twice (the duplicate
scan, then the rows). Parsing the 4 MiB block takes about 30 ms; its digest (XXH3-128, not
a cryptographic hash: the key of a cache within one process) about 0.1 ms, where SHA-256
took 2.5 ms. A file whose first block changed is checked again."""
_CHECKED_MAX = 64
_checked_lock = threading.Lock()


def read_header(src: SourceConfig, base_dir: Path, *, quick: bool = False) -> list[str]:
    """Column names of a CSV source (declared ``columns`` or the header row).

    Reading the names parses (and so checks) the first block of the file; ``quick`` parses
    a small block first, for callers that read the whole file right after anyway. A block
    checked before (the same bytes, the same settings) is not parsed again."""
    path = locate(base_dir, src.path)
    if src.columns:
        open_file(path).close()
        return list(src.columns)
    seen: tuple[str, bytes, str] | None = None
    try:
        if isinstance(path, Path):  # a remote file is checked each time
            with open(path, "rb") as raw:
                digest = xxhash.xxh3_128_digest(raw.read(CHECK_BLOCK_SIZE + (1 << 16)))
            seen = (str(path), digest, src.model_dump_json())
    except OSError:  # reported by the parse below, as before
        seen = None
    with _checked_lock:
        known = _CHECKED.get(seen) if seen is not None else None
    if known is not None:
        return list(known)
    names = _parse_header(src, path, quick)
    if seen is not None and not quick:  # a quick parse may have checked less
        with _checked_lock:
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.pop(next(iter(_CHECKED)))
            _CHECKED[seen] = list(names)
    return names


def _parse_header(src: SourceConfig, path: Path | str, quick: bool) -> list[str]:
    names: list[str] | None = None
    sizes = (HEADER_BLOCK_SIZE, CHECK_BLOCK_SIZE) if quick else (CHECK_BLOCK_SIZE,)
    for block_size in sizes:

        def skip(row: pcsv.InvalidRow) -> str:
            return "skip"

        read, parse, convert = csv_options(src, path, None, skip, block_size)
        opened = _decoded(src, path)
        if opened is not None:
            read.encoding = "utf8"
        with opened.stream if opened else open_file(path) as stream, guard(skip) as not_utf8:
            try:
                names = list(pcsv.open_csv(stream, read, parse, convert).schema.names)
                if opened is not None:
                    _check_header_bytes(src, path, opened.undefined)
                break
            except pa.ArrowException as exc:
                if not_utf8 or block_size == sizes[-1]:
                    if not not_utf8 and _too_long(exc):
                        raise _long_header(src, path, block_size) from None
                    raise _read_error(path, exc, src.encoding, bool(not_utf8)) from None
    assert names is not None
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SourceError(
            f"{path}: duplicate column names in header: {', '.join(dup)}",
            key="source.header",
            hint="rename them in the file, or declare names with source.columns",
        )
    return names


def _decoded(src: SourceConfig, path: Path | str) -> Opened | None:
    """A file in an encoding other than UTF-8, decoded here (:func:`.csv_lines.open_at`:
    a byte the encoding does not define is noted, not fatal); None for UTF-8, which
    pyarrow reads as it is."""
    if is_utf8(src.encoding):
        return None
    return open_at(open_file, path, src.encoding, 1, Mark())


def _check_header_bytes(src: SourceConfig, path: Path | str, found: list[Undefined]) -> None:
    """A byte the encoding does not define in the header line: the columns cannot be named."""
    line = src.skip_rows + 1
    bad = next((u for u in found if u.line == line), None)
    if not src.header or bad is None:
        return
    raise SourceError(
        f"the header cannot be read: {bad.describe(src.encoding, line)}",
        file=str(path),
        line=line,
        key="source.encoding",
        hint="set source.encoding to the file's encoding (utf-8 for a file exported as UTF-8),"
        " or fix the header line in the source",
    )


def _too_long(exc: Exception) -> bool:
    """pyarrow's failure on a row longer than its block (or a header longer than the first)."""
    text = str(exc)
    return "straddl" in text or "Empty CSV file or block" in text


def _long_header(src: SourceConfig, path: Path | str, limit: int) -> SourceError:
    line = src.skip_rows + 1
    return SourceError(
        f"the header (line {line}) cannot be read: it is longer than {size_text(limit)}",
        file=str(path),
        line=line,
        key="source.header",
        hint="check source.delimiter and source.quotechar (a stray quote in the header runs"
        " on to the next quote), or name the columns with source.columns and header: false",
    )


def _read_error(path: Path | str, exc: Exception, encoding: str, not_utf8: bool) -> SourceError:
    """``not_utf8``: pyarrow could not decode a malformed line (see :mod:`.utf8guard`)."""
    text = str(exc)
    if not_utf8 or "UTF8" in text or "utf-8" in text.lower():
        with open_file(path) as stream:
            return not_utf8_error(path, stream, encoding)
    hint = "check source.delimiter, source.quotechar and source.encoding"
    return SourceError(f"cannot read {path} as CSV: {text}", key="source", hint=hint)


def iter_csv(src: SourceConfig, base_dir: Path) -> Iterator[SourceBatch]:
    """Yield :class:`SourceBatch` es of string columns, in file order, of about
    ``src.batch_size`` rows (parsed blocks merged).

    The parse stops at a record it must not take as it parses (a quoted field that swallowed
    lines, :mod:`.swallow`): that record's first line is delivered as a malformed line and the
    file is parsed again from the next line on (:func:`.csv_lines.open_at`); a record that
    the file ends inside (a quoted field still open, no line ending: the file was cut) is
    one malformed line, every line of it, and nothing follows it. A row longer
    than a block makes pyarrow fail ("straddling object"); the file is then parsed again from
    that row's line with blocks 4x larger, up to :data:`MAX_BLOCK_SIZE`; a line that still
    does not fit is a malformed line too, and the file is parsed again from the next line."""
    path = locate(base_dir, src.path)
    names = read_header(src, base_dir, quick=True)
    first = src.skip_rows + 1 + (1 if src.header else 0)  # the first data line
    progress = Progress(first)
    block = BLOCK_SIZE
    mark = Mark()
    opened: Opened | None = None  # the file from progress.next_line on (a re-read)
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([(n, pa.string()) for n in names]))
    pending: list[SourceBatch] = []
    pending_rows = 0
    while True:
        failure: SourceError | None = None
        swallow: Swallow | None = None
        given, opened = opened, None
        try:
            for part in iter_blocks(src, path, names, block, progress, given):
                pending.append(part)
                pending_rows += part.batch.num_rows
                if pending_rows >= src.batch_size:
                    yield _merge(pending)
                    pending, pending_rows = [], 0
            swallow = progress.swallow
        except pa.ArrowException as exc:
            top = given is None and progress.next_line == first
            if given is not None and str(exc).endswith("Empty CSV file"):
                break  # nothing after the line re-read from
            if not _too_long(exc):
                failure = _read_error(path, exc, src.encoding, False)
            elif top and "straddl" not in str(exc):  # the header does not fit in a block
                if block >= MAX_BLOCK_SIZE:
                    raise _long_header(src, path, block) from None
                block *= 4
                continue
            elif block < MAX_BLOCK_SIZE:  # again from the line that did not fit
                block *= 4
                opened = _reopen(src, path, progress.next_line, mark)
                continue
            else:
                swallow = Swallow(progress.next_line, "long")
        except NotUtf8 as exc:
            failure = _read_error(path, exc, src.encoding, True)
        if failure is not None:
            if pending:  # rows read before a failure are still delivered, then the failure
                yield _merge(pending)
            raise failure
        if swallow is None:
            break
        if swallow.kind == "cut":  # the file ends inside the record: one malformed line
            pending.append(_cut(src, path, swallow, empty))
            break
        # the line where the record starts is malformed; parse again from the next line
        opened = _reopen(src, path, swallow.line + 1, mark)
        quote = stray_quote(opened.before, src.delimiter, src.quotechar)
        why = reason(swallow, quote, opened.before_bytes, src, MAX_BLOCK_SIZE)
        # a quoted field still open at the end of the file: the export may have been cut
        # inside it, so rows may be missing (the step's mirror deletes are skipped)
        hides = (
            f"{path}: a quoted field opened on line {swallow.line} is still open at the end of"
            " the file: the file may end mid-record (cut short, or still being written)"
            if swallow.kind == "end"
            else None
        )
        bad = BadLine(swallow.line, opened.before, why, hides)
        pending.append(SourceBatch(str(path), empty, np.zeros(0, dtype=np.int64), [bad]))
        progress = Progress(swallow.line + 1)
        block = BLOCK_SIZE
    if pending:
        yield _merge(pending)


def _cut(src: SourceConfig, path: Path | str, sw: Swallow, empty: pa.RecordBatch) -> SourceBatch:
    """The file's last record, from line ``sw.line`` to its end inside a quoted field without
    a line ending (:class:`.swallow.Swallow` kind "cut"), as one malformed line that stops
    the step's mirror deletes."""
    first = sw.text.split("\n", 1)[0].rstrip("\r")
    quote = stray_quote(first, src.delimiter, src.quotechar)
    why = reason(sw, quote, len(first.encode()), src, MAX_BLOCK_SIZE)
    hides = cut_hides(str(path), sw.line, "ends inside a quoted field", sw.other)
    bad = BadLine(sw.line, sw.text, why, hides)
    return SourceBatch(str(path), empty, np.zeros(0, dtype=np.int64), [bad])


def _reopen(src: SourceConfig, path: Path | str, line: int, mark: Mark) -> Opened:
    return open_at(open_file, path, src.encoding, line, mark)


def _merge(parts: list[SourceBatch]) -> SourceBatch:
    """One SourceBatch of consecutive parts of one file."""
    if len(parts) == 1:
        return parts[0]
    return SourceBatch(
        parts[0].file,
        pa.concat_batches([p.batch for p in parts]),
        np.concatenate([p.rows for p in parts]),
        [b for p in parts for b in p.bad],
    )

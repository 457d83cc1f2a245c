"""A CSV file parsed block by block (:func:`iter_blocks`) into string record batches with
exact physical line numbers, for :mod:`recordsync.read.csv_reader`; and the pyarrow options
and stream every read of a CSV source uses.

pyarrow parses serially (``use_threads=False``) so that its invalid-row callback knows each
record's ordinal; line numbers are then derived from record ordinals plus the newlines that
quoted cells (and malformed lines) contain. Blank lines are skipped but counted.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.batch import BadLine, SourceBatch, may_contain
from recordsync.read.csv_lines import (
    Mark,
    Opened,
    RawLines,
    Undefined,
    is_utf8,
    open_at,
    raw_closing,
)
from recordsync.read.remote import open_stream
from recordsync.read.swallow import Swallow, first_swallow
from recordsync.read.utf8guard import guard

BLOCK_SIZE = 1 << 20
"""Bytes parsed at a time. pyarrow reads up to 32 blocks ahead of the parser in the background
(its readahead is not configurable), so this bounds that buffer to ~32 MiB; the parsed blocks
are merged into batches of ``source.batch_size`` rows."""


def _encoding(name: str, path: Path | str) -> str:
    try:
        canonical = codecs.lookup(name).name
    except LookupError:
        raise SourceError(
            f"unknown encoding {name!r}",
            file=str(path),
            key="source.encoding",
            hint="use e.g. utf-8, utf-8-sig, cp1252, latin-1",
        ) from None
    return "utf8" if canonical in ("utf-8", "utf-8-sig") else canonical


def open_file(path: Path | str) -> pa.NativeFile:
    """The source file as a stream of bytes (an object-storage URI through ``fsspec``).
    A local file that is not compressed reads its blocks into buffers of the C library's
    allocator: Arrow's default one (mimalloc) gives each block's buffer fresh pages the
    kernel has to zero, read after read, where ``malloc`` reuses what the last block freed
    (about 0.1 s of CPU less per million rows of the benchmark's contacts)."""
    if isinstance(path, str):  # a URI (object storage)
        return open_stream(path)
    if not path.is_file():
        raise SourceError(
            f"source file not found: {path}",
            key="source.path",
            hint="check source.path (relative to the mapping file's directory)",
        )
    try:
        if path.suffix.lower().lstrip(".") in _COMPRESSED or os.environ.get(_POOL_ENV):
            return pa.input_stream(str(path), compression="detect")
        return pa.OSFile(str(path), memory_pool=pa.system_memory_pool())
    except (OSError, pa.ArrowException) as exc:
        raise SourceError(f"cannot open source file {path}: {exc}", key="source.path") from None


_COMPRESSED = frozenset({"gz", "gzip", "bz2", "lz4", "zst", "zstd", "br", "brotli", "snappy"})
"""Name endings pyarrow's ``compression="detect"`` decompresses (and a few more): such a file
is opened as before."""
_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
"""Set: the user chose Arrow's allocator; the file's blocks come from it as everything else."""


def csv_options(
    src: SourceConfig,
    path: Path | str,
    names: list[str] | None,
    handler: object,
    block_size: int | None = None,
) -> tuple[pcsv.ReadOptions, pcsv.ParseOptions, pcsv.ConvertOptions]:
    skip = src.skip_rows + (1 if src.header and src.columns else 0)
    read = pcsv.ReadOptions(
        use_threads=False,
        block_size=block_size or BLOCK_SIZE,
        skip_rows=skip,
        column_names=src.columns if src.columns else None,
        encoding=_encoding(src.encoding, path),
    )
    parse = pcsv.ParseOptions(
        delimiter=src.delimiter,
        quote_char=src.quotechar or False,
        escape_char=src.escapechar or False,
        double_quote=src.escapechar is None,
        newlines_in_values=True,
        ignore_empty_lines=False,
        invalid_row_handler=handler,
    )
    types = {n: pa.string() for n in names} if names else None
    convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=False)
    return read, parse, convert


@dataclass(slots=True)
class Progress:
    """Where a parse of a CSV file got to: ``next_line`` is the first line not parsed yet;
    ``swallow`` the record it stopped at (a quoted field that swallowed lines): every row and
    malformed line before that record was delivered, nothing from it on."""

    next_line: int
    swallow: Swallow | None = None


def iter_blocks(
    src: SourceConfig,
    path: Path | str,
    names: list[str],
    block_size: int,
    progress: Progress,
    opened: Opened | None = None,
) -> Iterator[SourceBatch]:
    """One SourceBatch per parsed block (ArrowException on a parse failure).

    Without ``opened``, the file is parsed from its top (``progress.next_line`` is then the
    first data line); with it, ``opened.stream`` holds the file from line
    ``progress.next_line`` on, as UTF-8 (:func:`recordsync.read.csv_lines.open_at`). The parse
    stops at a quoted field that swallowed lines (``progress.swallow``). A row holding a byte
    the encoding does not define is a malformed line (:func:`_undefined_rows`)."""
    invalid: list[tuple[int, str, str]] = []

    def handler(row: pcsv.InvalidRow) -> str:
        msg = f"malformed line: expected {row.expected_columns} cells, found {row.actual_columns}"
        invalid.append((int(row.number or 0), row.text, msg))
        return "skip"

    raw = RawLines(open_file, path, src.encoding, progress.next_line)
    encoding = src.encoding
    if opened is not None:  # no header, no rows to skip, UTF-8
        src = src.model_copy(
            update={"skip_rows": 0, "header": False, "columns": names, "encoding": "utf-8"}
        )
    elif not is_utf8(encoding):  # decoded here, so that an undefined byte is one bad row
        _encoding(encoding, path)
        opened = open_at(open_file, path, encoding, 1, Mark())
        src = src.model_copy(update={"encoding": "utf-8"})
    read, parse, convert = csv_options(src, path, names, handler, block_size)
    undefined = _Undefined(opened.undefined if opened is not None else [], encoding)
    stream = opened.stream if opened is not None else None
    with guard(handler) as not_utf8:
        try:
            with raw_closing(raw):
                options = (read, parse, convert)
                yield from _parse_blocks(
                    src, path, options, invalid, progress, stream, raw, undefined
                )
        except pa.ArrowException as exc:
            if not_utf8:  # a malformed line pyarrow could not decode never reached handler
                raise NotUtf8(str(exc)) from None
            raise


class NotUtf8(Exception):
    """pyarrow failed on a malformed line that is not UTF-8."""


def _parse_blocks(
    src: SourceConfig,
    path: Path | str,
    options: tuple[pcsv.ReadOptions, pcsv.ParseOptions, pcsv.ConvertOptions],
    invalid: list[tuple[int, str, str]],
    progress: Progress,
    given: pa.NativeFile | None,
    raw: RawLines,
    undefined: _Undefined,
) -> Iterator[SourceBatch]:
    read, parse, convert = options
    # pyarrow numbers records from the top of what it reads, skipped rows and header included
    next_rec = read.skip_rows + (1 if (src.header and not src.columns) else 0) + 1
    next_line = progress.next_line
    label = str(path)
    with given if given is not None else open_file(path) as stream:
        reader = pcsv.open_csv(stream, read, parse, convert)
        for batch in reader:
            n = batch.num_rows
            k = 0
            invalid.sort(key=lambda t: t[0])
            while k < len(invalid) and invalid[k][0] < next_rec + n + k:
                k += 1
            here, invalid[:] = invalid[:k], invalid[k:]
            span = n + k
            extra = np.zeros(span, dtype=np.int64)
            is_bad = np.zeros(span, dtype=bool)
            for num, text, _ in here:
                pos = num - next_rec
                is_bad[pos] = True
                extra[pos] = text.count("\n")
            valid_extra = np.zeros(n, dtype=np.int64)
            for col in batch.columns:
                if pa.types.is_string(col.type) and may_contain(col, "\n"):
                    valid_extra += pc.count_substring(col, "\n").to_numpy(zero_copy_only=False)
            extra[~is_bad] = valid_extra
            starts = next_line + np.arange(span, dtype=np.int64)
            starts[1:] += np.cumsum(extra)[:-1]
            lines = starts[~is_bad]
            bad = [BadLine(int(starts[num - next_rec]), text, msg) for num, text, msg in here]
            swallow = first_swallow(batch, lines, valid_extra, bad, src, raw.text, raw.unended)
            ends = lines + valid_extra  # each row's last line
            if swallow is not None:
                keep = lines < swallow.line
                batch, lines, ends = batch.filter(pa.array(keep)), lines[keep], ends[keep]
                bad = [b for b in bad if b.line < swallow.line]
            next_rec += span
            next_line = int(starts[-1] + extra[-1] + 1) if span else next_line
            upto = swallow.line if swallow is not None else next_line
            if undefined.before(upto):
                batch, lines, bad = undefined.rows(batch, lines, ends, bad, upto, src)
            blank = _blank_mask(batch)
            if blank is not None:
                keep = pa.array(~blank)
                batch = batch.filter(keep)
                lines = lines[~blank]
            if swallow is not None:
                progress.next_line, progress.swallow = swallow.line, swallow
                yield SourceBatch(label, batch, lines, bad)
                return
            progress.next_line = next_line
            yield SourceBatch(label, batch, lines, bad)
        if invalid:
            empty = pa.RecordBatch.from_pylist([], schema=reader.schema)
            none = np.zeros(0, dtype=np.int64)
            tail: list[BadLine] = []
            for _, text, msg in invalid:
                tail.append(BadLine(next_line, text, msg))
                next_line += text.count("\n") + 1
            swallow = first_swallow(empty, none, none, tail, src, raw.text, raw.unended)
            if swallow is not None:
                tail = [b for b in tail if b.line < swallow.line]
                progress.swallow = swallow
            progress.next_line = swallow.line if swallow is not None else next_line
            if undefined.before(progress.next_line):
                undefined.rows(empty, none, none, tail, progress.next_line, src)
            yield SourceBatch(label, empty, none, tail)


class _Undefined:
    """The bytes a non-UTF-8 file's encoding does not define (noted by the stream as the
    parser reads it: every one before the end of a parsed block is known), taken in order."""

    def __init__(self, found: list[Undefined], encoding: str) -> None:
        self._found, self._taken, self._encoding = found, 0, encoding

    def before(self, line: int) -> bool:
        """Whether bytes not taken yet lie before line ``line``."""
        return self._taken < len(self._found) and self._found[self._taken].line < line

    def rows(
        self,
        batch: pa.RecordBatch,
        lines: npt.NDArray[np.int64],
        ends: npt.NDArray[np.int64],
        bad: list[BadLine],
        upto: int,
        src: SourceConfig,
    ) -> tuple[pa.RecordBatch, npt.NDArray[np.int64], list[BadLine]]:
        """``batch`` (its rows start on ``lines`` and end on ``ends``) without the rows that
        hold a byte found before line ``upto``: those are malformed lines, added to ``bad``
        (a malformed line that holds one says so too). Bytes on lines before the first row
        (the header, rows skipped) are not this method's (:func:`read_header` checks them)."""
        hit: dict[int, list[Undefined]] = {}
        while self.before(upto):
            u = self._found[self._taken]
            self._taken += 1
            i = int(np.searchsorted(lines, u.line, side="right")) - 1
            if i >= 0 and ends[i] >= u.line:
                hit.setdefault(i, []).append(u)
                continue
            for b in bad:
                if b.line <= u.line <= b.line + b.text.count("\n"):
                    b.message += f"; {u.describe(self._encoding, b.line)}"
                    break
        if not hit:
            return batch, lines, bad
        names = batch.schema.names
        for i, found in hit.items():
            cells = [batch.column(n)[i].as_py() for n in names]
            why = "; ".join(u.describe(self._encoding, int(lines[i])) for u in found)
            message = (
                f"{why} (source.encoding: {self._encoding}; the row's text shows it as"
                " U+FFFD): fix the byte in the source, or set source.encoding to the file's"
                " encoding (utf-8 for a file exported as UTF-8)"
            )
            bad.append(BadLine(int(lines[i]), _as_line(cells, src), message))
        bad.sort(key=lambda b: b.line)
        keep = np.ones(len(lines), dtype=bool)
        keep[list(hit)] = False
        return batch.filter(pa.array(keep)), lines[keep], bad


def _as_line(cells: list[str | None], src: SourceConfig) -> str:
    """A row's cells as one CSV line in the source's dialect (read back by
    :func:`recordsync.prepare.salvage.bad_row`)."""
    out = io.StringIO()
    if src.quotechar:
        writer = csv.writer(out, delimiter=src.delimiter, quotechar=src.quotechar)
    else:
        writer = csv.writer(out, delimiter=src.delimiter, quoting=csv.QUOTE_NONE, escapechar="\\")
    writer.writerow(["" if c is None else c for c in cells])
    return out.getvalue().rstrip("\r\n")


def _blank_mask(batch: pa.RecordBatch) -> np.ndarray | None:
    """Rows whose every cell is empty (blank lines); None when there are none."""
    if batch.num_columns == 0 or batch.num_rows == 0:
        return None
    mask = np.ones(batch.num_rows, dtype=bool)
    for col in batch.columns:
        if not pa.types.is_string(col.type):
            return None
        mask &= pc.equal(pc.utf8_length(col), 0).to_numpy(zero_copy_only=False)
        if not mask.any():
            return None
    return mask

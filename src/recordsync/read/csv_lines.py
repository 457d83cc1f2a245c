"""A CSV file re-read from a physical line: the stream :mod:`recordsync.read.csv_reader` parses
again after a line it could not read as a row (a stray quote whose field swallowed the lines
after it, a line longer than the parser's largest block).

:func:`open_at` opens the file at the first byte of a line, counting line breaks (``\\n``) as
the reader numbers lines, and returns the text of the line before it (the broken line). A
file in an encoding other than UTF-8 is decoded here and handed on as UTF-8 (its line breaks
are then bytes ``\\n`` whatever the encoding). A local uncompressed file is not counted from
its top again at every re-read: the last position found is remembered (:class:`Mark`).

A byte the encoding leaves undefined (cp1252 has no character for 0x81, 0x8D, 0x8F, 0x90
and 0x9D) does not stop the read: it is handed on as U+FFFD and noted, with its line, in
:attr:`Opened.undefined`, so the reader can report the row that holds it (or the header).
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from recordsync.core.errors import SourceError
from recordsync.read.utf8guard import NOT_UTF8_HINT

CHUNK = 1 << 20
LINE_TEXT_MAX = 1 << 20
"""At most this much of a broken line's text is kept (for the report)."""
UNDEFINED_MAX = 16
"""At most this many undefined bytes are noted per line."""
_ESCAPED = re.compile("[\udc80-\udcff]+")
"""Bytes a decoder could not decode, as ``surrogateescape`` hands them on."""


def is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:  # reported by the parser's options
        return True


@dataclass(slots=True)
class Mark:
    """A known position: line ``line`` starts at byte ``offset`` of the file (UTF-8 only)."""

    line: int = 1
    offset: int = 0


@dataclass(slots=True)
class Undefined:
    """Bytes ``data`` on line ``line`` of a file that its encoding does not define."""

    line: int
    data: bytes

    def describe(self, encoding: str, row_line: int | None = None) -> str:
        """``byte 0x81 is not cp1252 text``, with ``on line N`` unless the line is
        ``row_line`` (the line the message is about already)."""
        shown = " ".join(f"0x{b:02x}" for b in self.data)
        what = "byte" if len(self.data) == 1 else "bytes"
        where = "" if self.line == row_line else f" on line {self.line}"
        verb = "is" if len(self.data) == 1 else "are"
        return f"{what} {shown}{where} {verb} not {encoding} text"


@dataclass(slots=True)
class Opened:
    """A stream at the first byte of a line; ``before`` is the previous line (at most
    :data:`LINE_TEXT_MAX` of it, without its line break) and ``before_bytes`` its length.
    ``undefined``: the bytes the encoding does not define, in file order, noted as the
    stream is read (always empty for UTF-8, which the parser checks itself)."""

    stream: pa.NativeFile
    before: str
    before_bytes: int
    undefined: list[Undefined] = field(default_factory=list)


class _Utf8(io.RawIOBase):
    """A file in another encoding, read as UTF-8. Bytes the encoding does not define become
    U+FFFD, each noted in ``undefined`` with its line (``line``: the file's first line)."""

    def __init__(self, raw: pa.NativeFile, encoding: str, path: Path | str, line: int) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)("surrogateescape")
        self._encoding, self._path, self._line = encoding, path, line
        self._buf, self._at = b"", 0  # decoded bytes; those before _at were read
        self._done = False
        self.undefined: list[Undefined] = []

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        chunk = self._raw.read(CHUNK)
        try:
            text = self._decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:  # bytes surrogateescape cannot carry (below 0x80)
            raise SourceError(
                f"not valid {self._encoding} text (after line {self._line})",
                file=str(self._path),
                key="source.encoding",
                hint=NOT_UTF8_HINT,
            ) from None
        try:  # an undefined byte is a lone surrogate here, which UTF-8 cannot encode
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # (a search for them costs 5x the encoding)
            text = self._note(text)
            data = text.encode("utf-8", "surrogatepass")
        self._line += text.count("\n")
        self._buf = self._buf[self._at :] + data
        self._at = 0
        self._done = not chunk

    def _note(self, text: str) -> str:
        """``text`` with its undefined bytes noted and replaced by U+FFFD."""
        line, at = self._line, 0
        for found in _ESCAPED.finditer(text):
            line += text.count("\n", at, found.start())
            at = found.start()
            data = bytes(ord(c) - 0xDC00 for c in found.group())
            last = self.undefined[-1] if self.undefined else None
            if last is not None and last.line == line:
                last.data = (last.data + data)[:UNDEFINED_MAX]
            else:
                self.undefined.append(Undefined(line, data[:UNDEFINED_MAX]))
        return _ESCAPED.sub(lambda m: "\ufffd" * len(m.group()), text)

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._buf) - self._at < size):
            self._fill()
        end = len(self._buf) if size < 0 else min(len(self._buf), self._at + size)
        out, self._at = self._buf[self._at : end], end
        return out

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Prefixed(io.RawIOBase):
    """``head`` bytes, then the rest of ``stream``."""

    def __init__(self, head: bytes, stream: pa.NativeFile | _Utf8) -> None:
        self._head, self._stream = head, stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head:
            n = len(self._head) if size < 0 else size
            out, self._head = self._head[:n], self._head[n:]
            return out
        return bytes(self._stream.read(size) if size >= 0 else self._stream.read())

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


def open_at(opener: object, path: Path | str, encoding: str, line: int, mark: Mark) -> Opened:
    """``path`` opened at the first byte of line ``line`` (1: its top), read as UTF-8 from there;
    ``opener(path)`` opens the file as :func:`recordsync.read.csv_blocks.open_file` does.
    ``mark`` is where to start counting (moved to ``line``) when the file can seek."""
    assert callable(opener)
    raw: pa.NativeFile = opener(path)
    utf8 = is_utf8(encoding)
    source: pa.NativeFile | _Utf8
    first = 1
    if utf8 and raw.seekable() and 1 < mark.line <= line:
        raw.seek(mark.offset)
        first = mark.line
    source = raw if utf8 else _Utf8(raw, encoding, path, 1)
    try:
        rest, before, size, used = _skip(source, line - first)
    except BaseException:
        source.close()
        raise
    if utf8 and raw.seekable():
        mark.line, mark.offset = line, (mark.offset if first > 1 else 0) + used
    text = before.decode("utf-8", "replace")  # UTF-8 here; a cut character is replaced
    if line - 1 == 1:
        text = text.removeprefix("\ufeff")
    stream = pa.PythonFile(_Prefixed(rest, source), mode="r")
    undefined = source.undefined if isinstance(source, _Utf8) else []
    return Opened(stream, text.rstrip("\r"), size, undefined)


def _skip(stream: pa.NativeFile | _Utf8, breaks: int) -> tuple[bytes, bytes, int, int]:
    """Read past ``breaks`` line breaks: the bytes read after the last one, the line before
    it (its first :data:`LINE_TEXT_MAX` bytes), that line's length, and the bytes skipped."""
    line = bytearray()
    length = used = 0
    while breaks > 0:
        chunk = bytes(stream.read(CHUNK))
        if not chunk:
            return b"", bytes(line), length, used
        found = chunk.count(b"\n")
        if found < breaks:
            breaks -= found
            used += len(chunk)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                line, length = bytearray(chunk[cut + 1 : cut + 1 + LINE_TEXT_MAX]), 0
                length = len(chunk) - cut - 1
            else:
                line += chunk[: max(0, LINE_TEXT_MAX - len(line))]
                length += len(chunk)
            continue
        pos = -1
        for _ in range(breaks):
            pos = chunk.index(b"\n", pos + 1)
        prev = chunk.rfind(b"\n", 0, pos)
        if prev < 0:
            line += chunk[: max(0, min(pos, LINE_TEXT_MAX - len(line)))]
            length += pos
        else:
            line = bytearray(chunk[prev + 1 : min(pos, prev + 1 + LINE_TEXT_MAX)])
            length = pos - prev - 1
        return chunk[pos + 1 :], bytes(line), length, used + pos + 1
    return b"", b"", 0, 0


def stray_quote(text: str, delimiter: str, quotechar: str | None) -> tuple[int, int] | None:
    """Where the quoted field left open at the end of line ``text`` starts: (character,
    cell), both 1-based; None when every quoted field of the line is closed on it."""
    if quotechar is None:
        return None
    cell, at_start, open_at_char = 1, True, 0
    quoted = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quoted:
            if ch == quotechar:
                if i + 1 < n and text[i + 1] == quotechar:
                    i += 1
                else:
                    quoted = False
        elif ch == delimiter:
            cell += 1
            at_start = True
            i += 1
            continue
        elif ch == quotechar and at_start:
            quoted, open_at_char = True, i + 1
        at_start = False
        i += 1
    return (open_at_char, cell) if quoted else None


class RawLines:
    """The raw text of lines of a file, asked for in increasing line order (a second,
    forward-only read alongside the parser: the text of the records whose cells hold line
    breaks, which pyarrow does not keep). Opened at the first call."""

    def __init__(self, opener: object, path: Path | str, encoding: str, first: int) -> None:
        self._opener, self._path, self._encoding = opener, path, encoding
        self._line = first  # the line self._buf starts with
        self._stream: pa.NativeFile | None = None
        self._buf = b""
        self._eof = False
        self._unended = False

    def unended(self) -> bool:
        """Whether the lines :meth:`text` returned last run to the end of the file, which has
        no line ending after them (their last line is not empty and does not end with a
        carriage return): a file that ends mid-line."""
        return self._unended

    def _more(self) -> bool:
        assert self._stream is not None
        chunk = b"" if self._eof else bytes(self._stream.read(CHUNK))
        self._eof = not chunk
        self._buf += chunk
        return bool(chunk)

    def text(self, first: int, count: int) -> str:
        """Lines ``first`` .. ``first + count - 1``, joined by ``\\n`` (without the last
        line break); ``first`` is never before a line asked for earlier."""
        if self._stream is None:
            self._stream = open_at(
                self._opener, self._path, self._encoding, self._line, Mark()
            ).stream
        while self._line < first:  # skip whole lines
            k = self._buf.count(b"\n")
            if k < first - self._line:
                self._line += k
                self._buf = b""
                if not self._more():
                    self._unended = False
                    return ""
                continue
            pos = -1
            for _ in range(first - self._line):
                pos = self._buf.index(b"\n", pos + 1)
            self._buf = self._buf[pos + 1 :]
            self._line = first
        while self._buf.count(b"\n") < count and self._more():
            pass
        pos, ended = -1, True
        for _ in range(count):
            nxt = self._buf.find(b"\n", pos + 1)
            if nxt < 0:  # the end of the file (the loop above read up to it)
                pos, ended = len(self._buf), False
                break
            pos = nxt
        out, self._buf = self._buf[:pos], self._buf[pos + 1 :]
        last = out[out.rfind(b"\n") + 1 :]
        self._unended = not ended and last != b"" and not last.endswith(b"\r")
        self._line = first + count
        text = out.decode("utf-8", "replace")
        return text.removeprefix("\ufeff") if first == 1 else text

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


@contextmanager
def raw_closing(raw: RawLines) -> Iterator[RawLines]:
    try:
        yield raw
    finally:
        raw.close()

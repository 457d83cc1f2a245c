"""Turn pyarrow's silent UTF-8 failure on a malformed line into the encoding hint.

pyarrow decodes an invalid row's text as UTF-8 *before* it calls the invalid-row handler
(``pyarrow._csv._handle_invalid_row``). A ragged line in a file that is not UTF-8 therefore
never reaches the handler: the UnicodeDecodeError goes to ``sys.unraisablehook`` ("Exception
ignored in: <function …>" on stderr) and the read fails with a generic "CSV parse error".
:func:`guard` captures those decode errors for one handler, so the reader can raise the same
"set source.encoding" error that a well-formed non-UTF-8 file gets, naming the first line that
is not UTF-8.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from recordsync.core.errors import SourceError

NOT_UTF8_HINT = "the file is not UTF-8: set source.encoding (e.g. cp1252 or latin-1)"
_CHUNK = 1 << 20

_lock = threading.Lock()
_active: dict[int, list[UnicodeDecodeError]] = {}  # id(handler) -> decode errors caught
_saved: Callable[[Any], object] | None = None


def _hook(unraisable: Any) -> None:
    exc = unraisable.exc_value
    sink = _active.get(id(unraisable.object)) if isinstance(exc, UnicodeDecodeError) else None
    if sink is not None:
        sink.append(exc)
        return
    (_saved or sys.__unraisablehook__)(unraisable)


@contextmanager
def guard(handler: object) -> Iterator[list[UnicodeDecodeError]]:
    """Within the block, decode errors pyarrow hits before calling ``handler`` are appended to
    the yielded list instead of being printed; other unraisable errors pass through."""
    global _saved
    caught: list[UnicodeDecodeError] = []
    with _lock:
        if not _active:
            _saved = sys.unraisablehook
            sys.unraisablehook = _hook
        _active[id(handler)] = caught
    try:
        yield caught
    finally:
        with _lock:
            _active.pop(id(handler), None)
            if not _active and sys.unraisablehook is _hook:
                sys.unraisablehook = _saved or sys.__unraisablehook__
                _saved = None


def first_bad_line(stream: pa.NativeFile) -> int | None:
    """The 1-based line number of the first bytes that are not UTF-8, or None."""
    line, carry = 1, b""
    while True:
        chunk: bytes = stream.read(_CHUNK)
        data = carry + chunk
        if not data:
            return None
        try:
            data.decode("utf-8")
            carry = b""
            line += data.count(b"\n")
        except UnicodeDecodeError as exc:
            if chunk and exc.end == len(data) and exc.reason == "unexpected end of data":
                carry = data[exc.start :]  # a character cut by the chunk boundary
                line += data[: exc.start].count(b"\n")
            else:
                return line + data[: exc.start].count(b"\n")
        if not chunk:
            return None


def not_utf8_error(path: Path | str, stream: pa.NativeFile, encoding: str) -> SourceError:
    """The encoding-hint error for ``path``, naming its first line that is not UTF-8."""
    line = first_bad_line(stream)
    return SourceError(
        f"not valid UTF-8 text (source.encoding is {encoding!r})",
        file=str(path),
        line=line,
        key="source.encoding",
        hint=NOT_UTF8_HINT,
    )

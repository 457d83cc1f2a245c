"""The first line that is not UTF-8, across read chunks; decode errors caught per handler."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from recordsync.read import utf8guard
from recordsync.read.utf8guard import NOT_UTF8_HINT, first_bad_line, guard, not_utf8_error


def bad_line(data: bytes) -> int | None:
    return first_bad_line(pa.BufferReader(data))


@pytest.mark.parametrize("chunk", [1 << 20, 1, 2, 3, 4, 5])
def test_the_first_line_that_is_not_utf8_whatever_the_chunk(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(utf8guard, "_CHUNK", chunk)
    good = "id\nZoë\n€uro\n".encode()
    assert bad_line(b"") is None
    assert bad_line(good) is None
    assert bad_line(good + b"x\xe9y\n") == 4
    assert bad_line(b"\xff\n") == 1
    assert bad_line(good + "é".encode()[:1]) == 4  # cut at the end of the file
    assert bad_line(good + b"a\n\n\xc3(\n") == 6  # a lead byte without its follower


def unraisable(exc: BaseException, where: object) -> Any:
    return SimpleNamespace(exc_value=exc, object=where)


def decode_error() -> UnicodeDecodeError:
    return UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid continuation byte")


def test_decode_errors_go_to_their_handler_and_the_rest_pass_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passed: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", passed.append)
    a, b = object(), object()
    with guard(a) as caught_a:
        with guard(b) as caught_b:
            sys.unraisablehook(unraisable(error_b := decode_error(), b))
        assert sys.unraisablehook is not passed.append  # a is still guarded
        sys.unraisablehook(unraisable(error_a := decode_error(), a))
        sys.unraisablehook(unraisable(decode_error(), b))  # b's guard has ended
        sys.unraisablehook(other := unraisable(ValueError("x"), a))
    assert (caught_a, caught_b) == ([error_a], [error_b])
    assert len(passed) == 2 and passed[1] is other
    assert sys.unraisablehook == passed.append
    with guard(a):
        pass
    assert sys.unraisablehook == passed.append


def test_without_an_earlier_hook_the_default_one_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passed: list[Any] = []
    monkeypatch.setattr(sys, "__unraisablehook__", passed.append)
    monkeypatch.setattr(utf8guard, "_saved", None)
    utf8guard._hook(other := unraisable(ValueError("x"), object()))
    assert passed == [other]


def test_the_error_names_file_line_key_and_next_step(tmp_path: Path) -> None:
    error = not_utf8_error(tmp_path / "x.csv", pa.BufferReader(b"ok\n\xe9\n"), "utf-8")
    assert (error.file, error.line, error.key) == (str(tmp_path / "x.csv"), 2, "source.encoding")
    assert error.hint == NOT_UTF8_HINT
    assert "not valid UTF-8 text (source.encoding is 'utf-8')" in str(error)

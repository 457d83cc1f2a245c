"""A swallowing quoted field split into its physical lines, and the limits that decide it."""

from __future__ import annotations

import pytest

from recordsync.config import SourceConfig
from recordsync.read.batch import BadLine
from recordsync.read.swallow import _message, _over, _split, inside

SRC = SourceConfig(path="s.csv", max_quoted_lines=3, max_quoted_bytes=100)


def test_the_message_names_the_start_the_size_and_the_limits() -> None:
    assert _message(5, 4, 120, SRC) == (
        "a quoted field that starts at line 5 spans 4 lines (120 bytes), more than"
        " source.max_quoted_lines 3 or source.max_quoted_bytes 100: unbalanced quote? Fix the"
        " quoting at line 5, or raise those limits if the field is meant to be that long"
    )


@pytest.mark.parametrize(
    ("lines", "size", "over"),
    [(3, 100, False), (4, 0, True), (2, 101, True), (2, 100, False), (1, 10**6, False)],
)
def test_the_limits(lines: int, size: int, over: bool) -> None:
    assert _over(lines, size, SRC) is over


def test_each_physical_line_becomes_a_bad_line_blank_lines_stay_blank() -> None:
    hides = "a quoted field that starts at line 5 swallowed 3 lines"
    assert _split(5, 'a,"x\r\nb\r\n\r\nc\r\n', 40, SRC) == [
        BadLine(5, 'a,"x', _message(5, 4, 40, SRC), hides),
        BadLine(6, "b", inside(5), hides),
        BadLine(8, "c", inside(5), hides),
    ]


@pytest.mark.parametrize("text", ['a,"x\nb\nc', 'a,"x\nb\nc\r', 'a,"x\nb\nc\n'])
def test_a_line_break_ending_the_field_is_not_a_line(text: str) -> None:
    out = _split(2, text, 9, SRC)
    assert [b.line for b in out] == [2, 3, 4]
    assert out[0].message == _message(2, 3, 9, SRC)
    assert out[2].text == "c"
    assert {b.hides for b in out} == {"a quoted field that starts at line 2 swallowed 2 lines"}


def test_inside() -> None:
    assert inside(9) == (
        "unreadable: inside a quoted field that started at line 9 (unbalanced quote?)"
    )

"""A swallowing quoted field split into its physical lines, and the limits that decide it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from recordsync.config import SourceConfig
from recordsync.read.batch import BadLine
from recordsync.read.swallow import _message, _over, _split, hiding_rows, inside, split_swallowed

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


def test_rows_and_bad_lines_over_the_limits_are_split_in_line_order() -> None:
    wide = ("1", "a\n" + "x" * 60, "y" * 50)  # 2 lines, 113 bytes over all its cells
    batch = pa.RecordBatch.from_pydict(
        {
            "id": ["0", "1", wide[0], "3"],
            "email": ["a", "b\nc\nd", wide[1], "e\nf\ng\nh\ni"],
            "name": ["n", "n", wide[2], "n"],
        }
    )
    lines = np.array([2, 3, 6, 8], dtype=np.int64)
    newlines = np.array([0, 2, 1, 4], dtype=np.int64)
    kept = BadLine(13, "x\ny\nz", "malformed line")  # 3 lines: within the limits
    split = BadLine(16, "p\nq\nr\ns", "malformed line")  # 4 lines: over
    keep, out = split_swallowed(batch, lines, newlines, [kept, split], SRC)
    assert keep is not None and keep.tolist() == [True, True, False, False]
    assert out == [
        *_split(6, ",".join(wide), 113, SRC),
        *_split(8, "3,e\nf\ng\nh\ni,n", 11, SRC),
        kept,
        *_split(16, split.text, 7, SRC),
    ]


def test_nothing_over_the_limits_keeps_every_row() -> None:
    batch = pa.RecordBatch.from_pydict({"id": ["0", "1"], "email": ["a", "b\nc"]})
    lines, newlines = np.array([2, 3]), np.array([0, 1])
    assert split_swallowed(batch, lines, newlines, [], SRC) == (None, [])


def test_hiding_rows_finds_a_line_like_a_row_in_any_text_cell() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "n": pa.array([1, 2], pa.int64()),
            "note": ["a b\nc,d", "plain\nno delimiter"],
        }
    )
    assert hiding_rows(batch, np.array([4, 9]), ",") == {
        4: "line 4: a quoted field holds line 5, which looks like a row (unbalanced quote?)"
    }
    two = pa.RecordBatch.from_pydict({"a": ["x\ny\nz,1"], "b": ["w"]})
    assert hiding_rows(two, np.array([7]), ",") == {
        7: "line 7: a quoted field holds line 9, which looks like a row (unbalanced quote?)"
    }


def test_only_carriage_returns_are_trimmed_from_each_line() -> None:
    out = _split(2, 'a,"X\r\nb X \r\nc X\r\n\r', 9, SRC)
    assert [b.text for b in out] == ['a,"X', "b X ", "c X"]
    assert out[0].message == _message(2, 3, 9, SRC)  # a lone "\r" after the last break
    assert _split(2, 'a,"X \r\nb', 9, SRC)[0].text == 'a,"X '

"""The raw text of a record checked for a quote that swallowed lines (:func:`scan`), the
first such record of a block, and the reasons given to its line."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from recordsync.config import SourceConfig
from recordsync.read.batch import BadLine
from recordsync.read.csv_lines import stray_quote
from recordsync.read.swallow import (
    Swallow,
    _over,
    first_swallow,
    hiding_rows,
    reason,
    scan,
    size_text,
)

SRC = SourceConfig(path="s.csv", max_quoted_lines=3, max_quoted_bytes=100)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('1,"12 Main\nApt 4, Floor 2",x', None),  # one delimiter: an address line
        ('1,x,"12 Main\nApt 4, Floor 2"', None),
        ('1,"a\n2,b,c\n3,d",e', Swallow(5, "rows", 6)),
        ('"1,a,b\n2,b,c', Swallow(5, "rows", 6)),  # to the end of the file
        ('"1,a,b\n"2,b,c', Swallow(5, "close", 6)),  # the next quote, not a delimiter after it
        ('1,"say ""hi""\nthere",x', None),
        ('1,"x""\n2,b,c",d', Swallow(5, "rows", 6)),  # a doubled quote does not close it
    ],
)
def test_scan(text: str, found: Swallow | None) -> None:
    assert scan(text, 5, 3, SRC) == found


def test_scan_without_quoting_finds_nothing() -> None:
    assert scan('"1,a,b\n2,b,c', 5, 3, SourceConfig(path="s.csv", quotechar=None)) is None


@pytest.mark.parametrize(
    ("line", "where"),
    [('a,b,"c', (5, 3)), ('"a,b', (1, 1)), ('a,"b",c', None), ('a,"b"",c', (3, 2)), ("a", None)],
)
def test_stray_quote(line: str, where: tuple[int, int] | None) -> None:
    assert stray_quote(line, ",", '"') == where


def test_the_first_record_that_swallowed_lines_by_line() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"id": ["0", "1", "2"], "email": ["a", "b\nc", "d\n4,e,f"], "name": ["n", "n", "n"]}
    )
    lines = np.array([2, 3, 9], dtype=np.int64)
    newlines = np.array([0, 1, 1], dtype=np.int64)
    texts = {3: '1,"b\nc",n', 9: '2,"d\n4,e,f",n'}
    asked: list[int] = []

    def raw(line: int, count: int) -> str:
        asked.append(line)
        return texts.get(line, "")

    bad = [BadLine(6, '"x,y\n5,6,7\n8', "malformed line")]
    assert first_swallow(batch, lines, newlines, bad, SRC, raw) == Swallow(6, "rows", 7)
    # in line order, stopping at the first; a bad line's own lines are read only when its
    # text ends inside a quoted field (is the file's end after them mid-line?)
    assert asked == [3, 6]
    assert first_swallow(batch, lines, newlines, [], SRC, raw) == Swallow(9, "rows", 10)


def test_limits() -> None:
    batch = pa.RecordBatch.from_pydict({"a": ["x\ny\nz\nw"], "b": ["1"]})
    raw = {2: '"x\ny\nz\nw",1'}
    got = first_swallow(batch, np.array([2]), np.array([3]), [], SRC, lambda n, c: raw[n])
    assert got == Swallow(2, "limits", 4, 11)


def test_reasons() -> None:
    assert reason(Swallow(7, "rows", 9), (4, 2), 10, SRC, 1 << 26) == (
        "unbalanced quote: the quote at character 4 (cell 2) opens a quoted field that runs on"
        " over the next lines, and line 9 in it looks like a row; this line is not read, the"
        " lines after it are read as rows of their own: fix the quoting of line 7 (a quote"
        ' inside a cell is written twice: "")'
    )
    assert "source.max_quoted_lines 3 or source.max_quoted_bytes 100" in reason(
        Swallow(7, "limits", 4, 120), None, 10, SRC, 1 << 26
    )
    assert "a quote on it opens" in reason(Swallow(7, "close", 8), None, 10, SRC, 1 << 26)
    long = reason(Swallow(7, "long"), None, 70 << 20, SRC, 64 << 20)
    assert "the line is 73,400,320 bytes, more than the 64 MiB" in long
    assert "shorten or split line 7" in long
    assert "runs on for more than 64 MiB" in reason(Swallow(7, "long"), (1, 1), 9, SRC, 64 << 20)
    assert (size_text(64 << 20), size_text(1024)) == ("64 MiB", "1,024 bytes")


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


@pytest.mark.parametrize(
    ("text", "ncols", "found"),
    [
        # two columns: one delimiter on a swallowed line is a row
        ('1,"a\nb,c",d', 2, Swallow(5, "rows", 6)),
        ('1,"ab"c,d', 3, None),  # a quote closed on its own line: no line break swallowed
        ('1,"a\nb"c', 3, Swallow(5, "close", 6)),  # the last character after the quote
        ('1,x,"a\nb"\n2,c,d', 3, None),  # closed at a line end
        ('1,"a\nb",c\n2,"d\ne,f,g"', 3, Swallow(5, "rows", 8)),  # lines outside quotes count
        ('1,a"b,c', 3, None),  # a quote inside a cell on the record's first line
        ('1,"a\nb",c"d', 3, Swallow(5, "close", 6)),  # a quote inside a cell after the field
        ('1,"a\nb', 3, Swallow(5, "end", 6)),  # never closed, no line like a row
        ('1,"x\ny""', 3, Swallow(5, "end", 6)),  # a doubled quote at the very end
        ('1,"abc', 3, None),  # never closed, but on one line
    ],
)
def test_scan_boundaries(text: str, ncols: int, found: Swallow | None) -> None:
    assert scan(text, 5, ncols, SRC) == found


def test_scan_with_an_escape_character() -> None:
    esc = SourceConfig(path="s.csv", escapechar="\\")
    # the escaped quote does not close the field: the line after it looks like a row
    assert scan('"\\"\n2,b,c', 5, 3, esc) == Swallow(5, "rows", 6)  # escaped at once
    assert scan('"a\\"\n2,b,c', 5, 3, esc) == Swallow(5, "rows", 6)
    assert scan('1,"a\\"b\n2,c,d",e', 5, 3, esc) == Swallow(5, "rows", 6)
    assert scan('1,"a\\\\",b', 5, 3, esc) is None  # an escaped escape, then the closing quote
    # without an escape character the backslash is a character like any other
    assert scan('1,"a\\"\n2,b,c', 5, 3, SRC) is None


def test_over_the_limits_is_strictly_more() -> None:
    assert not _over(3, 100, SRC) and _over(4, 10, SRC)  # max_quoted_lines 3
    assert not _over(2, 100, SRC) and _over(2, 101, SRC)  # max_quoted_bytes 100
    assert not _over(1, 1000, SRC)  # one line: the bytes limit is for fields over lines


def test_a_record_of_exactly_the_line_limit_is_read() -> None:
    batch = pa.RecordBatch.from_pydict({"a": ["x\ny\nz"], "b": ["1"]})
    raw = {2: '"x\ny\nz",1'}
    assert first_swallow(batch, np.array([2]), np.array([2]), [], SRC, lambda n, c: raw[n]) is None


def test_a_record_the_file_ends_inside_without_a_line_ending_is_cut() -> None:
    """The file's last record ends inside a quoted field and the file has no line ending
    after it: one record cut short (kind "cut", its text whole), not a stray quote to split
    at, even with lines that look like rows; over the limits, the stray quote it reads as."""
    batch = pa.RecordBatch.from_pydict({"a": ["1", "2"], "b": ["x", "0\n3,y"]})
    lines, newlines = np.array([2, 3]), np.array([0, 1])
    texts = {3: '2,"0\n3,y'}

    def raw(line: int, count: int) -> str:
        return texts[line]

    def ends(mid_line: bool) -> Swallow | None:
        return first_swallow(batch, lines, newlines, [], SRC, raw, lambda: mid_line)

    assert ends(True) == Swallow(3, "cut", 4, 8, '2,"0\n3,y')
    assert ends(False) == Swallow(3, "rows", 4)  # a line ending last: a stray quote
    texts[3] = '2,"0\n3,y"'  # closed: a row that looks like one in its cell
    assert ends(True) == Swallow(3, "rows", 4)
    texts[3] = '2,"0\n3\n4\n5'  # 4 lines, over max_quoted_lines 3
    assert ends(True) == Swallow(3, "end", 6)
    # a bad line (its text without a line ending) is cut when its lines end the file so
    bad = [BadLine(3, '2,"0\n3,y,z', "malformed line")]
    texts[3] = bad[0].text
    got = first_swallow(no_rows(), np.array([2]), np.array([0]), bad, SRC, raw, lambda: True)
    assert got == Swallow(3, "cut", 4, 10, '2,"0\n3,y,z')
    got = first_swallow(no_rows(), np.array([2]), np.array([0]), bad, SRC, raw, lambda: False)
    assert got == Swallow(3, "rows", 4)


def no_rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"a": ["0"], "b": ["0"], "c": ["0"]})


def bad_only(text: str, src: SourceConfig = SRC) -> Swallow | None:
    bad = [BadLine(6, text, "malformed line")]
    return first_swallow(no_rows(), np.array([2]), np.array([0]), bad, src, lambda n, c: "")


def test_a_bad_lines_text_is_scanned_without_its_line_end_only() -> None:
    # what follows the last line break is part of the field, blanks and letters alike
    assert bad_only('"a,b\n  ') == Swallow(6, "end", 7)
    assert bad_only('"a\nX') == Swallow(6, "end", 7)
    assert bad_only('"a\nX\r\n') == Swallow(6, "end", 7)
    two = SourceConfig(path="s.csv", max_quoted_lines=2)
    assert bad_only("a\nb\n", two) is None  # two lines: the final line end is not a third
    one = SourceConfig(path="s.csv", max_quoted_lines=1)
    assert bad_only("\nx", one) == Swallow(6, "limits", 2, 2)  # a line break at its start
    assert bad_only("a,b\n", one) is None  # a line end only: one line


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (1 << 20, "1 MiB"),
        (3 << 20, "3 MiB"),
        (3 << 19, "1,572,864 bytes"),
        ((1 << 20) - 1, "1,048,575 bytes"),
    ],
)
def test_size_text(size: int, text: str) -> None:
    assert size_text(size) == text


def test_every_reason_in_full() -> None:
    after = "this line is not read, the lines after it are read as rows of their own"
    fix = 'fix the quoting of line 7 (a quote inside a cell is written twice: "")'
    assert reason(Swallow(7, "close", 8), None, 10, SRC, 1 << 26) == (
        "unbalanced quote: a quote on it opens a quoted field that runs on over the next"
        f" lines, to a quote on line 8 that is not followed by a delimiter; {after}: {fix}"
    )
    assert reason(Swallow(7, "end", 9), (3, 2), 10, SRC, 1 << 26) == (
        "unbalanced quote: the quote at character 3 (cell 2) opens a quoted field that is"
        f" never closed; {after}: {fix}"
    )
    assert reason(Swallow(7, "limits", 4, 120), (3, 2), 10, SRC, 1 << 26) == (
        "unbalanced quote: the quote at character 3 (cell 2) opens a quoted field that spans"
        " 4 lines (120 bytes), more than source.max_quoted_lines 3 or source.max_quoted_bytes"
        f" 100; {after}: {fix}, or raise those limits if the field is meant to be that long"
    )
    assert reason(Swallow(7, "cut", 9, 20, "x"), (3, 2), 10, SRC, 1 << 26) == (
        "cut short: the quote at character 3 (cell 2) opens a quoted field that is still open"
        " where the file ends, on line 9, without a line ending: the file ends mid-line (cut"
        " short, or still being written); lines 7 to 9 are this one record and none of them is"
        " read as a row: run again once the export is complete (if the quote is a stray one,"
        ' fix the quoting of line 7: a quote inside a cell is written twice: "")'
    )
    # a line of exactly the largest block is too long
    assert reason(Swallow(7, "long"), (1, 1), 1024, SRC, 1024).startswith(
        "line too long: the line is 1,024 bytes, more than the 1,024 bytes"
    )
    assert reason(Swallow(7, "long"), (1, 1), 1023, SRC, 1024).startswith("unbalanced quote:")

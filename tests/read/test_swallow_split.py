"""The raw text of a record checked for a quote that swallowed lines (:func:`scan`), the
first such record of a block, and the reasons given to its line."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from recordsync.config import SourceConfig
from recordsync.read.batch import BadLine
from recordsync.read.csv_lines import stray_quote
from recordsync.read.swallow import Swallow, first_swallow, hiding_rows, reason, scan, size_text

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
        return texts[line]

    bad = [BadLine(6, '"x,y\n5,6,7\n8', "malformed line")]
    assert first_swallow(batch, lines, newlines, bad, SRC, raw) == Swallow(6, "rows", 7)
    assert asked == [3]  # in line order, stopping at the first
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

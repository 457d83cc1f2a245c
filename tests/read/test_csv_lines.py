"""The raw text of a file's lines (:class:`recordsync.read.csv_lines.RawLines`) and whether
the lines it returned last end the file mid-line."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.read.csv_blocks import open_file
from recordsync.read.csv_lines import RawLines


@pytest.mark.parametrize(
    ("data", "first", "count", "text", "unended"),
    [
        (b"h\na\nb", 2, 2, "a\nb", True),  # the file ends after line 3, mid-line
        (b"h\na\nb\n", 2, 2, "a\nb", False),
        (b"h\na\nb\r\n", 2, 2, "a\nb\r", False),
        (b"h\na\nb\r", 2, 2, "a\nb\r", False),  # a carriage return last is a line ending
        (b"h\na\nb\n", 2, 3, "a\nb\n", False),  # the empty line after the last line ending
        (b"h\na\nb\nc", 2, 2, "a\nb", False),  # more lines follow
        (b"h\na\nb", 4, 1, "", False),  # past the end
    ],
)
def test_whether_the_lines_returned_end_the_file_mid_line(
    tmp_path: Path, data: bytes, first: int, count: int, text: str, unended: bool
) -> None:
    (tmp_path / "m.csv").write_bytes(data)
    raw = RawLines(open_file, tmp_path / "m.csv", "utf-8", 2)
    try:
        assert raw.unended() is False  # nothing returned yet
        assert (raw.text(first, count), raw.unended()) == (text, unended)
    finally:
        raw.close()

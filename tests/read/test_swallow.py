"""Quoted fields that swallowed lines (a stray quote): the line where the field starts is
reported with the quote it holds, and every line after it is read again as a row of its own;
every physical data line is accounted for. Corpus files: tests/data/malformed/."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import csv_reader, iter_source
from recordsync.read.swallow import hiding_rows

MALFORMED = Path(__file__).resolve().parents[1] / "data" / "malformed"


def write(tmp: Path, lines: list[str], eol: str = "\n") -> SourceConfig:
    (tmp / "s.csv").write_bytes(("id,email,name" + eol + eol.join(lines) + eol).encode())
    return SourceConfig(path="s.csv")


def data(n: int) -> list[str]:
    return [f"{i},u{i}@x.io,N{i}" for i in range(n)]


def read(src: SourceConfig, tmp: Path) -> tuple[list[int], list[tuple[int, str, str]]]:
    rows: list[int] = []
    bad: list[tuple[int, str, str]] = []
    for sb in iter_source(src, tmp):
        rows += sb.rows.tolist()
        bad += [(b.line, b.text, b.message) for b in sb.bad]
    return rows, bad


def values(src: SourceConfig, tmp: Path) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for sb in iter_source(src, tmp):
        out.update(zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True))
    return out


def test_two_stray_quotes_three_lines_apart_lose_no_row() -> None:
    """The corpus file: a quote opens a field in row P3 (line 5), another closes it three
    lines on; rows P4-P6 were folded into P3's City."""
    src = SourceConfig(path="two_stray_quotes.csv")
    rows, bad = read(src, MALFORMED)
    assert rows == [2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13]
    assert len(bad) == 1 and bad[0][:2] == (5, 'P3,p3@m.example,"C3')
    assert bad[0][2] == (
        "unbalanced quote: the quote at character 17 (cell 3) opens a quoted field that runs"
        " on over the next lines, and line 6 in it looks like a row; this line is not read,"
        " the lines after it are read as rows of their own: fix the quoting of line 5 (a"
        ' quote inside a cell is written twice: "")'
    )
    got = values(src, MALFORMED)
    assert got[6] == {"Name": "P4", "Email": "p4@m.example", "City": "C4"}
    assert got[8]["City"] == 'C6"'  # the closing quote is a character of its cell


def test_an_unclosed_quote_80_lines_before_the_end_loses_no_row() -> None:
    rows, bad = read(SourceConfig(path="unclosed_quote_near_end.csv"), MALFORMED)
    assert [b[0] for b in bad] == [222]  # row P220; the header is line 1
    assert rows == [n for n in range(2, 302) if n != 222]
    assert "line 223 in it looks like a row" in bad[0][2]


def test_genuine_multi_line_values_are_read_as_they_parse() -> None:
    src = SourceConfig(path="multiline_addresses.csv")
    rows, bad = read(src, MALFORMED)
    assert bad == [] and rows == [2, 4, 5, 8]
    got = values(src, MALFORMED)
    assert got[2]["Address"] == "12 Main St\nApt 4, Floor 2"
    assert got[5]["Address"] == 'c/o "Dee"\nBox 9\nNorth, West'


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("where", ["early", "late"])
def test_a_stray_quote_swallowing_to_the_end_loses_no_row(
    tmp_path: Path, eol: str, where: str
) -> None:
    n = 2000
    at = 10 if where == "early" else n - 150
    lines = data(n)
    lines[at] = f'{at},u{at}@x.io,"N{at}'
    rows, bad = read(write(tmp_path, lines, eol), tmp_path)
    start = at + 2
    assert rows == [line for line in range(2, n + 2) if line != start]
    assert [b[:2] for b in bad] == [(start, f'{at},u{at}@x.io,"N{at}')]
    assert "the quote at character" in bad[0][2] and f"line {start + 1} in it" in bad[0][2]


def test_a_stray_quote_in_the_first_cell(tmp_path: Path) -> None:
    lines = data(300)
    lines[100] = '"100,u100@x.io,N100'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert len(rows) == 299 and [b[0] for b in bad] == [102]
    assert "the quote at character 1 (cell 1)" in bad[0][2]


def test_a_stray_quote_in_a_middle_cell_closed_later(tmp_path: Path) -> None:
    lines = data(400)
    lines[50] = '50,"u50@x.io,N50'
    lines[250] = '250,u250@x.io",N250'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == [52] and "(cell 2)" in bad[0][2]
    assert rows == [line for line in range(2, 402) if line != 52]


def test_stray_quotes_one_after_another_are_each_reported(tmp_path: Path) -> None:
    lines = data(30)
    for at in (3, 4, 10):
        lines[at] = f'"{at},u{at}@x.io,N{at}'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == [5, 6, 12]
    assert rows == [line for line in range(2, 32) if line not in (5, 6, 12)]


def test_a_multi_line_field_within_the_limits_stays_a_row(tmp_path: Path) -> None:
    lines = data(10)
    lines[3] = '3,u3@x.io,"N3\nsecond line\nthird"'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert bad == [] and rows == [2, 3, 4, 5, 8, 9, 10, 11, 12, 13]
    src = SourceConfig(path="s.csv", max_quoted_lines=2)
    rows, bad = read(src, tmp_path)
    assert [b[0] for b in bad] == [5, 6, 7]
    assert "spans 3 lines" in bad[0][2] and "source.max_quoted_lines 2" in bad[0][2]
    assert "expected 3 cells, found 1" in bad[1][2]  # each line after it, read on its own
    assert rows == [2, 3, 4, 8, 9, 10, 11, 12, 13]


def test_a_field_over_the_byte_limit_is_not_read_even_over_few_lines(tmp_path: Path) -> None:
    lines = data(10)
    lines[3] = '3,u3@x.io,"' + "x" * (70 << 10) + "\n" + "y" * 10 + '"'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == [5, 6] and "65536" in bad[0][2]
    assert len(rows) == 9


def test_a_swallowed_field_over_128_kib_loses_no_row(tmp_path: Path) -> None:
    lines = [f"{i},u{i}@x.io,{'N' * 60}" for i in range(3000)]
    lines[5] = '"5,u5@x.io,N5'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert len(rows) == 2999 and [b[0] for b in bad] == [7]


def test_mixed_line_ends_keep_physical_line_numbers_through_a_swallow(tmp_path: Path) -> None:
    lines = data(400)
    lines[20] = '20,u20@x.io,"N20'
    text = "id,email,name\r\n" + "".join(
        line + ("\r\n" if i % 2 else "\n") for i, line in enumerate(lines)
    )
    (tmp_path / "s.csv").write_bytes(text.encode())
    got = values(SourceConfig(path="s.csv"), tmp_path)
    rows, bad = read(SourceConfig(path="s.csv"), tmp_path)
    assert [b[0] for b in bad] == [22] and not bad[0][1].endswith("\r")
    assert rows == [line for line in range(2, 402) if line != 22]
    assert got[401] == {"id": "399", "email": "u399@x.io", "name": "N399"}


def test_a_stray_quote_in_a_cp1252_or_compressed_file(tmp_path: Path) -> None:
    import gzip

    lines = [f"{i},é{i}@x.io,N{i}" for i in range(20)]
    lines[4] = '4,é4@x.io,"N4'
    text = "id,email,name\n" + "\n".join(lines) + "\n"
    (tmp_path / "w.csv").write_bytes(text.encode("cp1252"))
    (tmp_path / "g.csv.gz").write_bytes(gzip.compress(text.encode()))
    for src in (SourceConfig(path="w.csv", encoding="cp1252"), SourceConfig(path="g.csv.gz")):
        rows, bad = read(src, tmp_path)
        assert [b[:2] for b in bad] == [(6, '4,é4@x.io,"N4')]
        assert rows == [line for line in range(2, 22) if line != 6]
        assert values(src, tmp_path)[21]["email"] == "é19@x.io"


def test_no_row_read_whole_holds_a_line_like_a_row(tmp_path: Path) -> None:
    lines = data(10)
    lines[2] = '2,u2@x.io,"N2\nnot, a row"'  # one delimiter: not a row of 3 cells
    lines[5] = '5,u5@x.io,"N5\n6,u6@x.io,N6'
    lines[6] = '7,u7@x.io,N7"'
    (tmp_path / "s.csv").write_text("id,email,name\n" + "\n".join(lines) + "\n")
    found: dict[int, str] = {}
    for sb in iter_source(SourceConfig(path="s.csv"), tmp_path):
        found.update(hiding_rows(sb.batch, sb.rows, ","))
    assert found == {}
    rows, bad = read(SourceConfig(path="s.csv"), tmp_path)
    assert [b[0] for b in bad] == [8] and rows == [2, 3, 4, 6, 7, 9, 10, 11, 12, 13]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> int:
    """The reader's blocks made small, so that a line of a few KiB is over its limit."""
    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 256)
    monkeypatch.setattr(csv_reader, "MAX_BLOCK_SIZE", 1024)
    return 1024


@pytest.mark.parametrize("at", [0, 3])
def test_a_line_longer_than_the_largest_block_names_its_line(
    tmp_path: Path, small_blocks: int, at: int
) -> None:
    lines = data(400)
    lines[at] = f"{at},u{at}@x.io," + "L" * 5000
    rows, bad = read(write(tmp_path, lines), tmp_path)
    line = at + 2
    assert [b[0] for b in bad] == [line] and bad[0][1] == lines[at]
    assert bad[0][2] == (
        f"line too long: the line is {len(lines[at]):,} bytes, more than the 1,024 bytes a row"
        " of a CSV source may have; this line is not read, the lines after it are read as rows"
        f" of their own: shorten or split line {line} in the source"
    )
    assert rows == [n for n in range(2, 402) if n != line]


def test_a_swallowed_field_longer_than_the_largest_block_loses_no_row(
    tmp_path: Path, small_blocks: int
) -> None:
    lines = data(400)
    lines[3] = '"3,u3@x.io,N3'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == [5]
    assert (
        "the quote at character 1 (cell 1) opens a quoted field that runs on for more"
        in (bad[0][2])
    )
    assert "than 1,024 bytes" in bad[0][2] and "fix the quoting of line 5" in bad[0][2]
    assert rows == [n for n in range(2, 402) if n != 5]


def test_a_header_longer_than_the_largest_block_is_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(csv_reader, "HEADER_BLOCK_SIZE", 256)
    monkeypatch.setattr(csv_reader, "CHECK_BLOCK_SIZE", 1024)
    (tmp_path / "s.csv").write_text("id,email," + "n" * 5000 + "\n1,a,b\n")
    with pytest.raises(SourceError) as err:
        read(SourceConfig(path="s.csv"), tmp_path)
    e = err.value
    assert (e.line, e.key, e.exit_code) == (1, "source.header", 2)
    assert e.detail == "the header (line 1) cannot be read: it is longer than 1,024 bytes"
    assert e.file is not None and e.file.endswith("s.csv")

"""Quoted fields that swallowed lines (a stray quote): reported line by line, with the line
where the field started, never as one row; every physical data line is accounted for."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import SourceConfig
from recordsync.read import iter_source


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


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("where", ["early", "late"])
def test_a_stray_quote_swallowing_to_the_end_is_reported_line_by_line(
    tmp_path: Path, eol: str, where: str
) -> None:
    n = 2000
    at = 10 if where == "early" else n - 150
    lines = data(n)
    lines[at] = f'{at},u{at}@x.io,"N{at}'
    rows, bad = read(write(tmp_path, lines, eol), tmp_path)
    start = at + 2
    assert rows == list(range(2, start))
    assert [b[0] for b in bad] == list(range(start, n + 2))  # every physical data line
    assert bad[0][1] == f"{at},u{at}@x.io,N{at}"
    assert f"a quoted field that starts at line {start} spans {n - at} lines" in bad[0][2]
    assert "source.max_quoted_lines 100" in bad[0][2]
    assert bad[-1][1] == f"{n - 1},u{n - 1}@x.io,N{n - 1}"
    assert bad[-1][2] == (
        f"unreadable: inside a quoted field that started at line {start} (unbalanced quote?)"
    )


def test_a_stray_quote_in_the_first_cell_malformed_row_is_split_too(tmp_path: Path) -> None:
    lines = data(300)
    lines[100] = '"100,u100@x.io,N100'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert len(rows) + len(bad) == 300 and bad[0][0] == 102 and len(bad) == 200
    assert "spans 200 lines" in bad[0][2]


def test_a_field_closed_by_a_later_quote_is_split_and_the_rows_after_it_are_read(
    tmp_path: Path,
) -> None:
    lines = data(400)
    lines[50] = '50,u50@x.io,"N50'
    lines[250] = '250,u250@x.io,N250"'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == list(range(52, 253))
    assert rows == list(range(2, 52)) + list(range(253, 402))


def test_a_multi_line_field_within_the_limits_stays_a_row(tmp_path: Path) -> None:
    lines = data(10)
    lines[3] = '3,u3@x.io,"N3\nsecond line\nthird"'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert bad == [] and rows == [2, 3, 4, 5, 8, 9, 10, 11, 12, 13]
    src = SourceConfig(path="s.csv", max_quoted_lines=2)
    rows, bad = read(src, tmp_path)
    assert [b[0] for b in bad] == [5, 6, 7] and "source.max_quoted_lines 2" in bad[0][2]
    assert rows == [2, 3, 4, 8, 9, 10, 11, 12, 13]


def test_a_field_over_the_byte_limit_is_split_even_over_few_lines(tmp_path: Path) -> None:
    lines = data(10)
    lines[3] = '3,u3@x.io,"' + "x" * (70 << 10) + "\n" + "y" * 10 + '"'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert [b[0] for b in bad] == [5, 6] and "65536" in bad[0][2]
    assert len(rows) == 9


def test_a_swallowed_field_over_128_kib_is_read_line_by_line(tmp_path: Path) -> None:
    """The csv module refuses cells over 128 KiB: such a field was a raw _csv.Error."""
    lines = [f"{i},u{i}@x.io,{'N' * 60}" for i in range(3000)]
    lines[5] = '"5,u5@x.io,N5'
    rows, bad = read(write(tmp_path, lines), tmp_path)
    assert len(rows) == 5 and len(bad) == 2995
    assert all(len(b[1]) < 100 for b in bad)


def test_mixed_line_ends_keep_physical_line_numbers_through_a_swallow(tmp_path: Path) -> None:
    lines = data(400)
    lines[20] = '20,u20@x.io,"N20'
    text = "id,email,name\r\n" + "".join(
        line + ("\r\n" if i % 2 else "\n") for i, line in enumerate(lines)
    )
    (tmp_path / "s.csv").write_bytes(text.encode())
    rows, bad = read(SourceConfig(path="s.csv"), tmp_path)
    assert rows == list(range(2, 22)) and [b[0] for b in bad] == list(range(22, 402))
    assert all(not b[1].endswith("\r") for b in bad) and bad[-1][1] == "399,u399@x.io,N399"


def test_hiding_rows_names_a_multi_line_cell_holding_a_line_like_a_row(tmp_path: Path) -> None:
    from recordsync.read.swallow import hiding_rows

    lines = data(10)
    lines[2] = '2,u2@x.io,"N2\nnot, a row"'  # one delimiter: not a row of 3 cells
    lines[5] = '5,u5@x.io,"N5\n6,u6@x.io,N6'
    lines[6] = '7,u7@x.io,N7"'
    (tmp_path / "s.csv").write_text("id,email,name\n" + "\n".join(lines) + "\n")
    found: dict[int, str] = {}
    for sb in iter_source(SourceConfig(path="s.csv"), tmp_path):
        found.update(hiding_rows(sb.batch, sb.rows, ","))
    assert found == {
        8: "line 8: a quoted field holds line 9, which looks like a row (unbalanced quote?)"
    }


def test_a_swallowed_field_longer_than_the_largest_block_is_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordsync.errors import SourceError
    from recordsync.read import csv_reader

    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 256)
    monkeypatch.setattr(csv_reader, "MAX_BLOCK_SIZE", 1024)
    lines = data(400)
    lines[3] = '"3,u3@x.io,N3'
    with pytest.raises(SourceError) as err:
        read(write(tmp_path, lines), tmp_path)
    e = err.value
    assert "is longer than" in e.message and "an unbalanced quote?" in e.message
    assert e.key == "source.quotechar" and e.hint is not None and "stray quote" in e.hint
    assert "s.csv" in str(e)

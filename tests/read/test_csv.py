"""CSV reading: encodings, compression, quoting, ragged rows, exact line numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from recordsync.config import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source, source_columns

DATA = Path(__file__).resolve().parent.parent / "data"


def read_all(
    src: SourceConfig, base: Path = DATA
) -> tuple[list[tuple[int, dict[str, str]]], list[tuple[int, str]]]:
    rows, bad = [], []
    for sb in iter_source(src, base):
        rows += list(zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True))
        bad += [(b.line, b.text) for b in sb.bad]
    return rows, bad


def test_utf8_bom_is_stripped_and_values_stay_strings() -> None:
    rows, bad = read_all(SourceConfig(path="bom.csv"))
    assert bad == []
    assert rows == [
        (2, {"id": "1", "name": "Zoë", "zip": "00123"}),
        (3, {"id": "2", "name": "Bob", "zip": "04000"}),
    ]


def test_cp1252_with_semicolons() -> None:
    rows, _ = read_all(SourceConfig(path="cp1252.csv", delimiter=";", encoding="cp1252"))
    assert [r[1]["name"] for r in rows] == ["Renée", "François"]
    assert rows[1][1]["city"] == "€uro"


def test_cp1252_read_as_utf8_is_a_source_error_with_a_hint() -> None:
    with pytest.raises(SourceError) as err:
        read_all(SourceConfig(path="cp1252.csv", delimiter=";"))
    assert "cp1252.csv" in str(err.value)
    assert "encoding" in str(err.value)


@pytest.mark.parametrize("ragged_first", [True, False])
@pytest.mark.parametrize("block", ["header", "later"])
def test_not_utf8_with_a_ragged_line_names_the_first_bad_line(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    ragged_first: bool,
    block: str,
) -> None:
    """pyarrow decodes a malformed line before calling our handler: a cp1252 ragged line read
    as UTF-8 must still give the encoding hint (not "CSV parse error", no stderr noise)."""
    import recordsync.read.csv_reader as csv_reader

    if block == "later":  # the bad lines lie past the header check, in the streamed read
        monkeypatch.setattr(csv_reader, "HEADER_BLOCK_SIZE", 64)
        monkeypatch.setattr(csv_reader, "CHECK_BLOCK_SIZE", 64)
        monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 64)
    lines = ["id;name"] + [f"{i};plain" for i in range(1, 30)]
    ragged, accented = ("7;Zoë;extra", "9;Zoë") if ragged_first else ("9;Zoë;extra", "7;Zoë")
    lines[7 if ragged_first else 9] = ragged
    lines[9 if ragged_first else 7] = accented
    (tmp_path / "x.csv").write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1252"))
    with pytest.raises(SourceError) as err:
        read_all(SourceConfig(path="x.csv", delimiter=";"), tmp_path)
    assert err.value.line == 8
    assert err.value.file is not None and err.value.file.endswith("x.csv")
    assert "set source.encoding" in str(err.value)
    assert "parse error" not in str(err.value)
    stderr = capfd.readouterr().err
    assert "Exception ignored" not in stderr and "UnicodeDecodeError" not in stderr


def test_gzip_is_detected_from_the_extension() -> None:
    rows, _ = read_all(SourceConfig(path="plain.csv.gz"))
    assert [(n, r["name"]) for n, r in rows] == [(2, "Ann"), (3, "Bob"), (4, "Cy")]


def test_quoted_newlines_keep_exact_line_numbers() -> None:
    rows, bad = read_all(SourceConfig(path="quoted_newlines.csv"))
    assert bad == []
    assert [(n, r["id"]) for n, r in rows] == [(2, "1"), (4, "2"), (5, "3"), (8, "4")]
    assert rows[0][1]["note"] == "two\r\nlines"
    assert rows[1][1]["note"] == 'a "quoted" word'


def test_ragged_rows_are_reported_with_their_line_and_reading_goes_on() -> None:
    rows, bad = read_all(SourceConfig(path="ragged.csv"))
    assert [(n, r["id"]) for n, r in rows] == [(2, "1"), (6, "4"), (10, "6")]
    assert bad == [(3, "2,Bob"), (4, "3,Cy,ok,extra"), (8, '5,Eve,"x\ny",z')]


def test_no_header_with_declared_columns_and_tab_delimiter() -> None:
    src = SourceConfig(
        path="noheader.tsv", header=False, columns=["id", "name", "code"], delimiter="\t"
    )
    rows, _ = read_all(src)
    assert rows == [
        (1, {"id": "1", "name": "Ann", "code": "00042"}),
        (2, {"id": "2", "name": "Bob", "code": "00043"}),
    ]
    assert source_columns(src, DATA) == ["id", "name", "code"]


def test_declared_columns_replace_the_header_row() -> None:
    rows, _ = read_all(SourceConfig(path="bom.csv", columns=["a", "b", "c"]))
    assert rows[0] == (2, {"a": "1", "b": "Zoë", "c": "00123"})


def test_missing_file_is_a_source_error_naming_the_path() -> None:
    with pytest.raises(SourceError) as err:
        read_all(SourceConfig(path="nope.csv"))
    assert "nope.csv" in str(err.value)
    assert err.value.hint and "source.path" in err.value.hint


def test_small_blocks_still_number_lines_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordsync.read import csv_reader

    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 64)
    lines = ["id,note"]
    expected = []
    line = 2
    for i in range(200):
        if i % 7 == 0:
            lines.append(f'{i},"multi\nline {i}"')
            expected.append((line, str(i)))
            line += 2
        elif i % 11 == 0:
            lines.append(f"{i},bad,row")
            line += 1
        else:
            lines.append(f"{i},x")
            expected.append((line, str(i)))
            line += 1
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    rows, bad = read_all(SourceConfig(path="s.csv"), tmp_path)
    assert [(n, r["id"]) for n, r in rows] == expected
    assert all(text.endswith(",bad,row") for _, text in bad)
    assert len(bad) == len([i for i in range(200) if i % 11 == 0 and i % 7])


cell = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=12
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(table=[("x", "y", "\n,")])  # a line in a cell with fewer delimiters than a row
@given(st.lists(st.tuples(cell, cell, cell), min_size=1, max_size=20))
def test_csv_write_read_round_trip(tmp_path: Path, table: list[tuple[str, str, str]]) -> None:
    """Whatever Python's csv writer writes, we read back, at the line where it starts; but a
    cell holding a line that looks like a row (as many delimiters as a row has, here two),
    which the reader refuses on purpose as a stray quote swallowing rows (tests/read/
    test_swallow.py; read.swallow)."""
    assume(not any(p.count(",") >= 2 for r in table for c in r for p in c.split("\n")[1:]))
    rows_in = [r for r in table if any(r)]  # an all-empty row is a blank line: skipped
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["a", "b", "c"])
    starts = []
    line = 2
    for r in table:
        w.writerow(r)
        if any(r):
            starts.append(line)
        line += sum(c.count("\n") for c in r) + 1
    path = tmp_path / "rt.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    rows, bad = read_all(SourceConfig(path="rt.csv"), tmp_path)
    assert bad == []
    assert [tuple(r.values()) for _, r in rows] == rows_in
    assert [n for n, _ in rows] == starts


def test_a_written_cell_holding_a_line_like_a_row_is_refused_line_by_line(tmp_path: Path) -> None:
    """The round trip's one exception: Python's csv writer quotes a cell holding a line break
    and two commas, and the reader takes that line for a row a stray quote swallowed: the
    record's first line is invalid, and the line after it is read on its own (here a quote
    never closed): both are reported, none is lost."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerows([["a", "b", "c"], ["", "", "\n,,"], ["1", "2", "3"]])
    (tmp_path / "rt.csv").write_text(buf.getvalue(), encoding="utf-8")
    rows, bad = read_all(SourceConfig(path="rt.csv"), tmp_path)
    assert bad == [(2, ',,"'), (3, ',,"')]
    assert rows == [(4, {"a": "1", "b": "2", "c": "3"})]


def test_skip_rows_before_the_header_and_bad_lines_at_the_end(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("Export of 2024\nid,name\n1,a\n2\n3,c\n4\n5,e,x\n")
    rows, bad = read_all(SourceConfig(path="s.csv", skip_rows=1), tmp_path)
    assert [(n, r["id"]) for n, r in rows] == [(3, "1"), (5, "3")]
    assert bad == [(4, "2"), (6, "4"), (7, "5,e,x")]
    rows, bad = read_all(
        SourceConfig(path="s.csv", skip_rows=2, header=False, columns=["x", "y"]), tmp_path
    )
    assert [n for n, _ in rows] == [3, 5] and [n for n, _ in bad] == [4, 6, 7]


def test_a_row_longer_than_a_block_grows_the_block_and_no_row_repeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordsync.read import csv_reader

    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 256)
    lines = ["id,note"] + [f"{i},short {i}" for i in range(60)]
    lines.insert(45, '45x,"' + "long\n" * 300 + '"')  # ~1.5 KB over 301 lines
    lines.insert(10, "10x,bad,row")
    (tmp_path / "long.csv").write_text("\n".join(lines) + "\n")
    src = SourceConfig(path="long.csv", batch_size=4, max_quoted_lines=400)  # batches go out first
    rows, bad = read_all(src, tmp_path)
    ids = [r["id"] for _, r in rows]
    assert ids == [str(i) for i in range(44)] + ["45x"] + [str(i) for i in range(44, 60)]
    assert bad == [(11, "10x,bad,row")]
    line_of = {r["id"]: n for n, r in rows}
    assert line_of["0"] == 2 and line_of["9"] == 12 and line_of["45x"] == 47
    assert line_of["44"] == 348  # the long row spans 301 lines
    assert len(next(r for _, r in rows if r["id"] == "45x")["note"]) == 1500


def test_batches_are_merged_up_to_batch_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordsync.read import csv_reader

    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 128)
    (tmp_path / "m.csv").write_text("id,v\n" + "".join(f"{i},x\n" for i in range(1000)))
    src = SourceConfig(path="m.csv", batch_size=300)
    sizes = [sb.batch.num_rows for sb in iter_source(src, tmp_path)]
    assert sum(sizes) == 1000 and len(sizes) < 10 and all(n >= 300 for n in sizes[:-1])


def test_a_checked_header_is_not_parsed_again_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run checks each CSV source up to three times; the 4 MiB parse happens once per
    content and settings. A rewrite with the same size and modification time is seen."""
    import os

    from recordsync.read import csv_reader

    parsed: list[str] = []
    parse = csv_reader._parse_header

    def counted(src: SourceConfig, path: Path, quick: bool) -> list[str]:
        parsed.append(f"{path.name}{' quick' if quick else ''}")
        return parse(src, path, quick)

    monkeypatch.setattr(csv_reader, "_parse_header", counted)
    path = tmp_path / "c.csv"
    path.write_text("id,name\n1,Ada\n", encoding="utf-8")
    src = SourceConfig(path="c.csv")
    assert source_columns(src, tmp_path) == ["id", "name"]
    assert source_columns(src, tmp_path) == ["id", "name"]
    assert [r[1] for r in read_all(src, tmp_path)[0]] == [{"id": "1", "name": "Ada"}]
    assert parsed == ["c.csv"]  # the full check once; the reader's quick one skipped
    stat = path.stat()
    path.write_text("ID;nome\n1;Ada\n", encoding="utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert source_columns(src, tmp_path) == ["ID;nome"]
    assert source_columns(SourceConfig(path="c.csv", delimiter=";"), tmp_path) == ["ID", "nome"]
    assert parsed == ["c.csv", "c.csv", "c.csv"]
    path.write_text("id,id\n1,2\n", encoding="utf-8")  # an error is never remembered
    for _ in range(2):
        with pytest.raises(SourceError, match="duplicate column names"):
            source_columns(src, tmp_path)
    assert len(parsed) == 5


def test_a_local_file_reads_its_bytes_with_either_allocator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uncompressed file's blocks come from the C library's allocator unless the user
    chose Arrow's (ARROW_DEFAULT_MEMORY_POOL): the bytes read are the file's either way."""
    from recordsync.read.csv_blocks import open_file

    data = b"id,v\n" + b"".join(b"%d,x\n" % i for i in range(5000))
    (tmp_path / "a.csv").write_bytes(data)
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    with open_file(tmp_path / "a.csv") as f:
        assert f.read() == data
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    with open_file(tmp_path / "a.csv") as f:
        assert f.read() == data

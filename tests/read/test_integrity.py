"""Whether a source was read whole (recordsync.read.integrity): a CSV file whose last record
has no line ending is checked (cut inside a quoted field, or cells too few: a malformed line
that stops mirror deletes; otherwise complete: read as it is); file stamps and what changed."""

from __future__ import annotations

import csv
import gzip
import io
import os
import tempfile
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recordsync.config.models import SourceConfig
from recordsync.read import iter_source
from recordsync.read.integrity import ENDS_MID_LINE, changes, stamp_source


def read(path: Path, **kw: object) -> tuple[list[int], list[tuple[int, str, str | None]]]:
    src = SourceConfig.model_validate({"path": path.name, **kw})
    got = list(iter_source(src, path.parent))
    rows = [r for sb in got for r in sb.rows.tolist()]
    bad = [(b.line, b.text, b.hides) for sb in got for b in sb.bad]
    return rows, bad


@pytest.mark.parametrize(
    ("data", "rows"),
    [
        (b"a,b,c\n1,x,y\n2,y,z", [2, 3]),  # no final line ending, complete
        (b'a,b,c\n1,x,y\n2,y,"z ""q"""', [2, 3]),  # quotes closed (doubled ones inside)
        (b'a,b,c\n1,x,"y\nq"', [2]),  # a multi-line last cell, closed
        (b"a,b,c\r\n1,x,y\r\n2,y,z", [2, 3]),
        (b"a,b,c\n1,x,y\n,,", [2]),  # a blank row (empty cells) last
    ],
)
def test_a_complete_last_line_is_read_as_it_is(
    tmp_path: Path, data: bytes, rows: list[int]
) -> None:
    (tmp_path / "m.csv").write_bytes(data)
    assert read(tmp_path / "m.csv") == (rows, [])


@pytest.mark.parametrize(
    ("data", "line", "text", "why"),
    [
        (b'a,b,c\n1,x,y\n2,y,"z ""q', 3, '2,y,"z ""q', "ends inside a quoted field"),
        (b'a,b,c\r\n1,x,y\r\n2,y,"z', 3, '2,y,"z', "ends inside a quoted field"),
        (b"a,b,c\n1,x,y\n2,y", 3, "2,y", "has 2 of 3 cells"),
        (b'a,b,c\n1,x,y\n"2,y', 3, '"2,y', "ends inside a quoted field"),
    ],
)
def test_a_last_record_cut_short_is_a_malformed_line_that_hides_rows(
    tmp_path: Path, data: bytes, line: int, text: str, why: str
) -> None:
    (tmp_path / "m.csv").write_bytes(data)
    rows, bad = read(tmp_path / "m.csv")
    assert rows == [2]
    assert [(b[0], b[1]) for b in bad] == [(line, text)]
    hides = bad[0][2]
    assert hides is not None
    assert hides.endswith(
        f"m.csv: its last record (line {line}) has no line ending and {why}: {ENDS_MID_LINE}"
    )


def test_a_quote_still_open_at_the_end_hides_rows_whatever_the_last_line(
    tmp_path: Path,
) -> None:
    """The reader splits a quote that never closes in a file that ends with a line ending
    (docs/mapping.md): its line is invalid and says rows may be missing, and the lines after
    it are rows (or malformed lines) of their own."""
    (tmp_path / "m.csv").write_bytes(b'a,b,c\n1,x,y\n2,y,"z\n')
    rows, bad = read(tmp_path / "m.csv")
    assert rows == [2] and [(b[0], b[1]) for b in bad] == [(3, '2,y,"z')]
    assert bad[0][2] is not None and "still open at the end of the file" in bad[0][2]
    (tmp_path / "m.csv").write_bytes(b'a,b,c\n1,x,y\n2,y,"z\nmore\n')
    rows, bad = read(tmp_path / "m.csv")
    assert rows == [2] and [(b[0], b[1]) for b in bad] == [(3, '2,y,"z'), (4, "more")]
    # the lines after it look like rows: a stray quote, read as rows of their own
    (tmp_path / "m.csv").write_bytes(b'a,b\n1,x\n2,"00000\n0,\n')
    rows, bad = read(tmp_path / "m.csv")
    assert rows == [2, 4] and [(b[0], b[1]) for b in bad] == [(3, '2,"00000')]


def test_a_last_line_with_cells_too_many_is_left_to_the_salvage(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes(b"a,b\n1,x\n2,y,z")
    assert read(tmp_path / "m.csv")[1] == [(3, "2,y,z", None)]


def test_the_escape_character_is_honoured(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes(b'a,b\n1,x\n2,"y\\"')  # \" is a quote: still open
    assert read(tmp_path / "m.csv", escapechar="\\")[1][0][2] is not None
    (tmp_path / "m.csv").write_bytes(b'a,b\n1,x\n2,"y\\""')
    assert read(tmp_path / "m.csv", escapechar="\\")[1] == []


def test_without_quoting_only_the_cells_count(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes(b'a,b\n1,x\n2,"y')
    assert read(tmp_path / "m.csv", quotechar=None)[1] == []


def test_a_compressed_file_is_not_checked_by_its_tail(tmp_path: Path) -> None:
    (tmp_path / "m.csv.gz").write_bytes(gzip.compress(b'a,b\n1,x\n2,"y'))
    rows, bad = read(tmp_path / "m.csv.gz")
    assert rows == [2, 3] and bad == []


def test_a_latin1_file_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes('a,b\n1,Zoë\n2,"Zoë'.encode("latin-1"))
    rows, bad = read(tmp_path / "m.csv", encoding="latin-1")
    assert rows == [2] and bad[0][:2] == (3, '2,"Zoë')


_cell = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\r\x00"),
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(_cell, _cell, _cell), min_size=1, max_size=6),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
)
def test_a_whole_file_without_a_final_line_ending_is_never_flagged(
    rows: list[tuple[str, str, str]], quoting: Literal[0, 1]
) -> None:
    """Round trip: what csv.writer writes, without its last line ending, reads back with
    every row (a blank last row, which is skipped, aside) and nothing flagged."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=quoting, lineterminator="\n")
    writer.writerow(["a", "b", "c"])
    writer.writerows(rows)
    text = out.getvalue()[:-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_bytes(text.encode())
        src = SourceConfig.model_validate({"path": "m.csv"})
        got = list(iter_source(src, path.parent))
    assert [b for sb in got for b in sb.bad] == []
    values = [tuple(r.values()) for sb in got for r in sb.batch.to_pylist()]
    assert values == [r for r in rows if any(r)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=_cell, cut=st.integers(min_value=0))
@example(head="00000\n0,", cut=8)  # the cell's last line looks like a row of two cells
@example(head='a""\nb,c\n3,d', cut=13)  # doubled quotes, then lines that look like rows
def test_a_file_cut_inside_its_last_quoted_cell_is_always_flagged(head: str, cut: int) -> None:
    """Cut anywhere inside the last row's quoted cell (before its closing quote, not right
    after a line break in it), the file is flagged: the row does not reach the batch, and no
    line of the cut cell becomes a row: the record, from its first line to the file's end, is
    one malformed line."""
    cell = head.replace('"', '""') + "tail"
    body = f'a,b\n1,x\n2,"{cell}"'
    start = body.index('"') + 1  # the cell's first character
    stop = start + cut % len(cell)  # before its closing quote
    while body[start:stop].endswith("\n") or (
        len(body[start:stop]) - len(body[start:stop].rstrip('"'))
    ) % 2:  # a line ending last is not checked; an odd quote last closes the field
        stop -= 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_bytes(body[:stop].encode())
        src = SourceConfig.model_validate({"path": "m.csv"})
        got = list(iter_source(src, path.parent))
    bad = [b for sb in got for b in sb.bad]
    assert [r for sb in got for r in sb.rows.tolist()] == [2]
    assert [(b.line, b.text) for b in bad] == [(3, body[len("a,b\n1,x\n") : stop])]
    assert bad[0].hides is not None and ENDS_MID_LINE in bad[0].hides


def test_a_cut_cell_whose_last_line_looks_like_a_row_is_not_read_as_one(tmp_path: Path) -> None:
    """The file ends inside line 3's quoted cell; its second line, ``0,``, has the cells of a
    row, but it is text of the cut cell: lines 3 and 4 are one malformed line, never a row."""
    (tmp_path / "m.csv").write_bytes(b'a,b\n1,x\n2,"00000\n0,')
    src = SourceConfig.model_validate({"path": "m.csv"})
    got = list(iter_source(src, tmp_path))
    assert [r for sb in got for r in sb.rows.tolist()] == [2]
    assert [v for sb in got for v in sb.batch.to_pylist()] == [{"a": "1", "b": "x"}]
    (bad,) = [b for sb in got for b in sb.bad]
    assert (bad.line, bad.text) == (3, '2,"00000\n0,')
    assert bad.message == (
        "cut short: the quote at character 3 (cell 2) opens a quoted field that is still open"
        " where the file ends, on line 4, without a line ending: the file ends mid-line (cut"
        " short, or still being written); lines 3 to 4 are this one record and none of them is"
        " read as a row: run again once the export is complete (if the quote is a stray one,"
        ' fix the quoting of line 3: a quote inside a cell is written twice: "")'
    )
    assert bad.hides == (
        f"{tmp_path / 'm.csv'}: its last record (lines 3 to 4) has no line ending and ends"
        f" inside a quoted field: {ENDS_MID_LINE}"
    )


def _accounted(path: Path, **kw: object) -> tuple[list[int], list[tuple[int, str]]]:
    """Rows and malformed lines of ``path``, checked to cover every data line once."""
    rows, bad = read(path, **kw)
    covered = rows + [n for line, text, _ in bad for n in range(line, line + text.count("\n") + 1)]
    text = path.read_bytes().decode(str(kw.get("encoding", "utf-8")))
    assert sorted(covered) == list(range(2, text.count("\n") + 2))
    assert all(hides is not None and ENDS_MID_LINE in hides for _, _, hides in bad[-1:])
    return rows, [(line, text) for line, text, _ in bad]


@pytest.mark.parametrize(
    ("data", "rows", "bad"),
    [
        # the cut cell spans several lines, each with the cells of a row
        (b'a,b\n1,x\n2,"0\n3,y\n4,z\n5,w', [2], [(3, '2,"0\n3,y\n4,z\n5,w')]),
        # in a middle column: the lines after it have all three cells
        (b'a,b,c\n1,x,y\n2,"z\n3,y,w\n4,v,u', [2], [(3, '2,"z\n3,y,w\n4,v,u')]),
        (b'a,b,c\n1,x,y\n2,y,"z\nmore', [2], [(3, '2,y,"z\nmore')]),  # too few cells
        (b'a,b\r\n1,x\r\n2,"0\r\n3,y\r\n4,z', [2], [(3, '2,"0\r\n3,y\r\n4,z')]),  # CRLF
        # doubled quotes before the cut: still inside the field
        (b'a,b\n1,x\n2,"say ""hi""\n3,y', [2], [(3, '2,"say ""hi""\n3,y')]),
        (b'a,b\n1,x\n2,"a\n3,""y""', [2], [(3, '2,"a\n3,""y""')]),
        (b'a,b\n1,x\n2,"a\n\n3,y', [2], [(3, '2,"a\n\n3,y')]),  # a blank line in it
        (b'a,b\n"1\n2,x\n3,y', [], [(2, '"1\n2,x\n3,y')]),  # the first data line
        (b'a,b\n1,x\n2,x,"y\n3,z', [2], [(3, '2,x,"y\n3,z')]),  # too many cells
    ],
)
def test_a_file_cut_inside_a_multi_line_cell_reads_no_line_of_it(
    tmp_path: Path, data: bytes, rows: list[int], bad: list[tuple[int, str]]
) -> None:
    (tmp_path / "m.csv").write_bytes(data)
    assert _accounted(tmp_path / "m.csv") == (rows, bad)


def test_a_cut_cell_over_batches_reads_no_line_of_it(tmp_path: Path) -> None:
    """The cut cell's lines would fall in batches of their own (batch_size 2)."""
    lines = [f"{i},v{i}" for i in range(5)] + ['5,"a'] + [f"{i},w{i}" for i in range(6, 12)]
    (tmp_path / "m.csv").write_bytes(("a,b\n" + "\n".join(lines)).encode())
    rows, bad = _accounted(tmp_path / "m.csv", batch_size=2)
    assert rows == [2, 3, 4, 5, 6] and [line for line, _ in bad] == [7]
    assert bad[0][1] == "\n".join(lines[5:])


def test_a_cut_cell_in_an_encoded_or_compressed_file_or_with_an_escape(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes('a,b\n1,Zoë\n2,"Zoë\n3,Zoë'.encode("cp1252"))
    assert _accounted(tmp_path / "m.csv", encoding="cp1252") == ([2], [(3, '2,"Zoë\n3,Zoë')])
    (tmp_path / "m.csv.gz").write_bytes(gzip.compress(b'a,b\n1,x\n2,"y\n3,z'))
    rows, bad = read(tmp_path / "m.csv.gz")  # a compressed file's tail is not checked, but
    assert rows == [2] and [(b[0], b[1]) for b in bad] == [(3, '2,"y\n3,z')]  # its text is
    assert bad[0][2] is not None and ENDS_MID_LINE in bad[0][2]
    (tmp_path / "e.csv").write_bytes(b'a,b\n1,x\n2,"y\\"\n3,z')  # \" is a quote: still open
    assert _accounted(tmp_path / "e.csv", escapechar="\\") == ([2], [(3, '2,"y\\"\n3,z')])


@pytest.mark.parametrize(
    ("data", "values"),
    [
        (b'a,b\n1,x\n2,"line 1\nline 2"', [["1", "x"], ["2", "line 1\nline 2"]]),
        (b'a,b\r\n1,x\r\n2,"line 1\r\nline 2"', [["1", "x"], ["2", "line 1\r\nline 2"]]),
        (b'a,b\n1,x\n2,"say ""hi""\nthere"', [["1", "x"], ["2", 'say "hi"\nthere']]),
        (b'a,b\n1,x\n2,"ends ""quoted""\n"""', [["1", "x"], ["2", 'ends "quoted"\n"']]),
        (b'a,b\n1,"x\ny"\n2,z', [["1", "x\ny"], ["2", "z"]]),
    ],
)
def test_a_closed_multi_line_cell_at_the_end_is_read_as_a_row(
    tmp_path: Path, data: bytes, values: list[list[str]]
) -> None:
    (tmp_path / "m.csv").write_bytes(data)
    src = SourceConfig.model_validate({"path": "m.csv"})
    got = list(iter_source(src, tmp_path))
    assert [b for sb in got for b in sb.bad] == []
    assert [list(v.values()) for sb in got for v in sb.batch.to_pylist()] == values


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_a_quote_open_at_a_final_line_ending_is_a_stray_quote(tmp_path: Path, eol: str) -> None:
    """With a line ending last a cut cannot be told from a stray quote: the lines after the
    quote are rows of their own (docs/mapping.md)."""
    data = f'a,b\n1,x\n2,"0\n3,y\n4,z{eol}'.encode()
    (tmp_path / "m.csv").write_bytes(data)
    rows, bad = read(tmp_path / "m.csv")
    assert rows == [2, 4, 5] and [(b[0], b[1]) for b in bad] == [(3, '2,"0')]


def test_changes_name_the_file_and_what_changed(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_bytes(b"a\n1\n")
    src = SourceConfig.model_validate({"path": "m.csv"})
    before = stamp_source(src, tmp_path)
    assert changes(before, stamp_source(src, tmp_path)) == []
    with open(tmp_path / "m.csv", "ab") as f:
        f.write(b"2\n")
    (found,) = changes(before, stamp_source(src, tmp_path))
    assert found.endswith("m.csv: its size went from 4 to 6 bytes") or (
        "m.csv: its size went from 4 to 6 bytes and it was modified at" in found
    )
    before = stamp_source(src, tmp_path)
    st_ = os.stat(tmp_path / "m.csv")
    os.utime(tmp_path / "m.csv", ns=(st_.st_atime_ns, 1_700_000_000_123_000_000))
    (found,) = changes(before, stamp_source(src, tmp_path))
    assert "m.csv: it was modified at 2023-11-14T22:13:20.123Z (before: " in found
    assert "size" not in found
    before = stamp_source(src, tmp_path)
    os.remove(tmp_path / "m.csv")
    (found,) = changes(before, stamp_source(src, tmp_path))
    assert found.endswith("m.csv is gone")


def test_a_parquet_directory_notices_a_file_that_appears(tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "ds" / "a.parquet")
    src = SourceConfig.model_validate({"path": "ds", "format": "parquet"})
    before = stamp_source(src, tmp_path)
    pq.write_table(pa.table({"id": [2]}), tmp_path / "ds" / "b.parquet")
    (found,) = changes(before, stamp_source(src, tmp_path))
    assert found.endswith(f"{Path('ds') / 'b.parquet'} appeared")
    query = SourceConfig.model_validate({"query": "select 1", "key": "x"})
    assert stamp_source(query, tmp_path) == {}


def _put(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    with fs.open_output_stream(path, compression=None) as f:
        f.write(data)


def test_on_s3_the_tail_and_the_object_size_are_checked(
    bucket: tuple[pafs.S3FileSystem, str], tmp_path: Path
) -> None:
    fs, name = bucket
    uri = f"s3://{name}/in/m.csv"
    _put(fs, f"{name}/in/m.csv", b'a,b\n1,x\n2,"y')
    src = SourceConfig.model_validate({"path": uri})
    got = list(iter_source(src, tmp_path))
    assert [b.hides for sb in got for b in sb.bad] == [
        f"{uri}: its last record (line 3) has no line ending and ends inside a quoted field: "
        + ENDS_MID_LINE
    ]
    before = stamp_source(src, tmp_path)
    _put(fs, f"{name}/in/m.csv", b'a,b\n1,x\n2,"y"\n')
    (found,) = changes(before, stamp_source(src, tmp_path))
    assert found.startswith(f"{uri}: its size went from 12 to 14 bytes")
    assert [b for sb in iter_source(src, tmp_path) for b in sb.bad] == []

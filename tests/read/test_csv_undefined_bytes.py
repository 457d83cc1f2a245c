"""A CSV source in an encoding that leaves some bytes undefined (cp1252: 0x81, 0x8D, 0x8F,
0x90, 0x9D): such a byte in the header is a source error naming the file, the line, the
byte and ``source.encoding``; in a data row it makes that row a malformed line naming the
byte, and every other row is read as usual."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recordsync.read.csv_reader as csv_reader
from recordsync.config import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source, source_columns

UNDEFINED = [0x81, 0x8D, 0x8F, 0x90, 0x9D]


def read_all(
    src: SourceConfig, base: Path
) -> tuple[list[tuple[int, dict[str, str]]], list[tuple[int, str, str]]]:
    rows, bad = [], []
    for sb in iter_source(src, base):
        rows += list(zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True))
        bad += [(b.line, b.text, b.message) for b in sb.bad]
    return rows, bad


@pytest.mark.parametrize("byte", UNDEFINED)
@pytest.mark.parametrize("skip_rows", [0, 1])
def test_an_undefined_byte_in_the_header_is_a_source_error(
    tmp_path: Path, byte: int, skip_rows: int
) -> None:
    head = b"exported by X\n" * skip_rows
    (tmp_path / "c.csv").write_bytes(head + b"name,em" + bytes([byte]) + b"ail\nAnn,a@x\n")
    src = SourceConfig(path="c.csv", encoding="cp1252", skip_rows=skip_rows)
    for read in (lambda: source_columns(src, tmp_path), lambda: read_all(src, tmp_path)):
        with pytest.raises(SourceError) as err:
            read()
        e = err.value
        assert (e.line, e.key, e.exit_code) == (skip_rows + 1, "source.encoding", 2)
        assert e.file is not None and e.file.endswith("c.csv")
        assert f"byte 0x{byte:02x} is not cp1252 text" in str(e)
        assert "set source.encoding" in str(e)


def test_an_undefined_byte_in_a_skipped_row_or_declared_header_is_not_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "c.csv").write_bytes(b"junk \x81\nname,email\nAnn,a@x\n")
    src = SourceConfig(path="c.csv", encoding="cp1252", skip_rows=1)
    assert read_all(src, tmp_path) == ([(3, {"name": "Ann", "email": "a@x"})], [])


@pytest.mark.parametrize("byte", UNDEFINED)
def test_an_undefined_byte_in_a_row_makes_that_row_a_malformed_line(
    tmp_path: Path, byte: int
) -> None:
    data = b"name,email\nAnn,a@x\nB" + bytes([byte]) + b"en,b@x\nCaf\xe9,c@x\n"
    (tmp_path / "c.csv").write_bytes(data)
    rows, bad = read_all(SourceConfig(path="c.csv", encoding="cp1252"), tmp_path)
    assert rows == [(2, {"name": "Ann", "email": "a@x"}), (4, {"name": "Café", "email": "c@x"})]
    [(line, text, message)] = bad
    assert (line, text) == (3, "B\ufffden,b@x")
    assert message.startswith(f"byte 0x{byte:02x} is not cp1252 text (source.encoding: cp1252")


def test_a_byte_on_a_later_line_of_a_quoted_cell_names_that_line(tmp_path: Path) -> None:
    data = b'name,note\nAnn,"one\ntwo \x9d\nthree"\nBen,ok\n'
    (tmp_path / "c.csv").write_bytes(data)
    rows, bad = read_all(SourceConfig(path="c.csv", encoding="cp1252"), tmp_path)
    assert rows == [(5, {"name": "Ben", "note": "ok"})]
    [(line, text, message)] = bad
    assert line == 2 and text == 'Ann,"one\ntwo \ufffd\nthree"'
    assert message.startswith("byte 0x9d on line 3 is not cp1252 text")


def test_a_malformed_line_with_an_undefined_byte_says_so(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_bytes(b"a,b\n1,2\n3,\x81,extra\n5,6\n")
    rows, bad = read_all(SourceConfig(path="c.csv", encoding="cp1252"), tmp_path)
    assert [r[0] for r in rows] == [2, 4]
    [(line, _, message)] = bad
    assert line == 3 and "expected 2 cells" in message
    assert message.endswith("byte 0x81 is not cp1252 text")


def test_rows_after_a_stray_quote_are_checked_too(tmp_path: Path) -> None:
    """The lines after a quote that swallowed lines are parsed again (a re-read)."""
    data = b'a,b\n1,"x\n2,y\n3,\x8f\n4,z\n'
    (tmp_path / "c.csv").write_bytes(data)
    src = SourceConfig(path="c.csv", encoding="cp1252", max_quoted_lines=1)
    rows, bad = read_all(src, tmp_path)
    assert [r[0] for r in rows] == [3, 5]
    assert [(line, text) for line, text, _ in bad] == [(2, '1,"x'), (4, "3,\ufffd")]
    assert bad[1][2].startswith("byte 0x8f is not cp1252 text")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    marked=st.lists(st.tuples(st.integers(0, 199), st.sampled_from(UNDEFINED)), max_size=8),
    batch_size=st.sampled_from([1, 7, 1000]),
)
def test_every_row_is_read_or_reported_at_its_line(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    marked: list[tuple[int, int]],
    batch_size: int,
) -> None:
    """Round trip: 200 rows written in cp1252 (some with an undefined byte), read in small
    blocks: the clean rows come back with their values, the others as malformed lines at
    their own line, naming their byte; nothing is lost or read twice."""
    monkeypatch.setattr(csv_reader, "BLOCK_SIZE", 256)
    tmp = tmp_path_factory.mktemp("u")
    bytes_at = dict(marked)
    lines = [b"id,name"]
    for i in range(200):
        extra = bytes([bytes_at[i]]) if i in bytes_at else b""
        lines.append(f"{i},Ren\u00e9e {i}".encode("cp1252") + extra)
    (tmp / "c.csv").write_bytes(b"\r\n".join(lines) + b"\r\n")
    src = SourceConfig(path="c.csv", encoding="cp1252", batch_size=batch_size)
    rows, bad = read_all(src, tmp)
    assert rows == [
        (i + 2, {"id": str(i), "name": f"Ren\u00e9e {i}"}) for i in range(200) if i not in bytes_at
    ]
    assert [(line, text) for line, text, _ in bad] == [
        (i + 2, f"{i},Ren\u00e9e {i}\ufffd") for i in sorted(bytes_at)
    ]
    for (line, _, message), i in zip(bad, sorted(bytes_at), strict=True):
        assert message.startswith(f"byte 0x{bytes_at[i]:02x} is not cp1252 text"), line

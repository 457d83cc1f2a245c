"""Any table written with the csv module, a stray quote inserted into any data line: the
reader yields every physical data line exactly once, as a row or as a malformed line, and
every line but the edited one as the row it was written as."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config import SourceConfig
from recordsync.read import iter_source

CELL = st.text(alphabet="ab ,\"'x;", max_size=6)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[list[str]], int, int]:
    ncols = draw(st.integers(2, 4))
    rows = draw(st.lists(st.lists(CELL, min_size=ncols, max_size=ncols), min_size=1, max_size=30))
    at = draw(st.integers(0, len(rows) - 1))
    return rows, at, draw(st.integers(0, 200))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_a_stray_quote_anywhere_leaves_every_line_accounted_for(
    case: tuple[list[list[str]], int, int],
) -> None:
    rows, at, where = case
    header = [f"c{i}" for i in range(len(rows[0]))]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    lines = buf.getvalue().split("\n")[:-1]
    edited = at + 1  # index in lines (the header is lines[0])
    line = lines[edited]
    pos = where % (len(line) + 1)
    lines[edited] = line[:pos] + '"' + line[pos:]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        seen: list[int] = []
        got: dict[int, list[str]] = {}
        for sb in iter_source(SourceConfig(path="s.csv"), Path(tmp)):
            for n, values in zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True):
                seen.append(n)
                got[n] = list(values.values())
                assert all("\n" not in v for v in got[n]), f"line {n} holds a line break"
            seen += [b.line for b in sb.bad]
            assert all("\n" not in b.text for b in sb.bad)
    data_lines = list(range(2, len(lines) + 1))
    # a row of empty cells is skipped as a blank line is (counted, not reported)
    empty = {i + 1 for i, text in enumerate(lines) if not text.strip(",")}
    assert sorted(seen) == [n for n in data_lines if n not in empty or n in seen]
    for i, row in enumerate(rows):
        n = i + 2
        if n != edited + 1 and n not in empty:
            assert got.get(n) == row, f"line {n}"

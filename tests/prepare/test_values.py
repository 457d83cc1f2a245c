"""The original values of prepared rows: made lazily, equal to what the file holds."""

from __future__ import annotations

import copy
import csv
import datetime as dt
import gc
import io
import pickle
import weakref
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recordsync.config import load_mapping
from recordsync.core.model import SourceRow
from recordsync.prepare import prepare_step


class Origin:
    """A stand-in for a batch: counts the dicts it makes."""

    def __init__(self) -> None:
        self.made = 0

    def values_of(self, source_row: int) -> dict[str, Any]:
        self.made += 1
        return {"row": str(source_row), "Name": "Ann"}


def test_a_lazy_row_makes_its_dict_once_then_lets_the_origin_go() -> None:
    origin = Origin()
    gone = weakref.ref(origin)
    row = SourceRow("c.csv", 7, None, origin)
    assert origin.made == 0
    first = row.values
    assert first == {"row": "7", "Name": "Ann"} and row.values is first
    assert origin.made == 1
    del origin
    gc.collect()
    assert gone() is None  # the row no longer holds its batch


def test_lazy_and_eager_rows_behave_alike() -> None:
    eager = SourceRow("c.csv", 7, {"row": "7", "Name": "Ann"})
    lazy = SourceRow("c.csv", 7, None, Origin())
    want = "SourceRow(source_file='c.csv', source_row=7, values={'row': '7', 'Name': 'Ann'})"
    assert repr(lazy) == repr(eager) == want
    assert SourceRow("c.csv", 7, None, Origin()) == eager
    assert eager != SourceRow("c.csv", 8, {"row": "7", "Name": "Ann"})
    assert eager != SourceRow("c.csv", 7, {})
    assert eager != ("c.csv", 7, {"row": "7", "Name": "Ann"})
    for twin in (
        pickle.loads(pickle.dumps(SourceRow("c.csv", 7, None, Origin()))),
        copy.copy(SourceRow("c.csv", 7, None, Origin())),
        copy.deepcopy(SourceRow("c.csv", 7, None, Origin())),
    ):
        assert twin == eager and twin._origin is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(lazy)
    match lazy:
        case SourceRow(file, line, {"Name": name}):
            assert (file, line, name) == ("c.csv", 7, "Ann")
        case _:
            pytest.fail("SourceRow no longer matches positionally")
    assert SourceRow("x.csv", 1).values == {}
    given = {"a": 1}
    assert SourceRow("x.csv", 1, given).values is given
    lazy.values = {"b": 2}
    assert lazy.values == {"b": 2}


CSV = (
    "Name,Email,Title\n"
    'Ann,ann@x.example,"two\nlines"\n'
    "Bob,,Dev\n"
    "Cy,cy@x.example,CTO,extra\n"  # malformed: 4 cells
    "\n"
    "Ann B,ANN@x.example ,\n"
    'Dee,"d@x.example",""\n'
)


def csv_rows(text: str) -> dict[int, dict[str, str]]:
    """Line where each well-formed row starts → its cells, by the csv module."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    out: dict[int, dict[str, str]] = {}
    start = reader.line_num + 1
    for cells in reader:
        if len(cells) == len(header):
            out[start] = dict(zip(header, cells, strict=True))
        start = reader.line_num + 1
    return out


@pytest.mark.parametrize("duplicates", ["last", "fail"])
def test_csv_values_equal_the_cells_of_each_line(tmp_path: Path, duplicates: str) -> None:
    (tmp_path / "c.csv").write_text(CSV)
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv}\nname: Name\nmatch_by: [email, name]\n"
        f"duplicates: {duplicates}\nfields:\n  email: Email\n  job_title: Title\n"
    )
    rows = list(
        prepare_step(load_mapping(tmp_path / "c.yaml"), base_dir=tmp_path, schema=None, users=None)
    )
    want = csv_rows(CSV)
    got = {r.source.source_row: r.source.values for r in rows if r.source.source_row in want}
    assert got == want and set(want) == {2, 4, 7, 8}
    bad = next(r for r in rows if r.source.source_row == 5)
    assert bad.source.values == {
        "Name": "Cy",
        "Email": "cy@x.example",
        "Title": "CTO",
        "_extra_cells": ["extra"],
    }
    assert [r.status.value for r in rows if r.source.source_row in (2, 7)] == [
        "duplicate",
        "duplicate" if duplicates == "fail" else "valid",
    ]


def test_parquet_values_are_the_typed_cells(tmp_path: Path) -> None:
    n = 600  # more than one batch, and more than the rows read one at a time
    table = pa.table(
        {
            "Name": [f"N{i}" for i in range(n)],
            "Seen": [dt.date(2025, 1, 1 + i % 28) if i % 5 else None for i in range(n)],
            "Score": [i / 4 for i in range(n)],
            "Unused": pa.array([["a", "b"] if i % 2 else [] for i in range(n)]),
        }
    )
    pq.write_table(table, tmp_path / "p.parquet")
    (tmp_path / "p.yaml").write_text(
        "object_type: contacts\nsource: {path: p.parquet, batch_size: 250}\nname: Name\n"
        "fields:\n  last_contacted: Seen\n"
    )
    rows = list(
        prepare_step(load_mapping(tmp_path / "p.yaml"), base_dir=tmp_path, schema=None, users=None)
    )
    assert [r.source.source_row for r in rows] == list(range(1, n + 1))
    assert [r.source.values for r in reversed(rows)] == list(reversed(table.to_pylist()))

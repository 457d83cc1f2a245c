"""The salvage of a malformed line, piece by piece: its cells, every alignment they allow,
and the reasons a line's keys cannot be trusted."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from recordsync.config.models import MappingConfig
from recordsync.core.model import Salvage
from recordsync.map.engine import BatchMapper
from recordsync.prepare.salvage import MAX_SHIFT, _alignments, _cells, bad_row
from recordsync.read import BadLine


@pytest.mark.parametrize(
    ("text", "delimiter", "quotechar", "cells"),
    [
        ("", ",", '"', []),
        ('a,"b,c",d', ",", '"', ["a", "b,c", "d"]),
        ('a;"b;c";d', ";", '"', ["a", "b;c", "d"]),
        ('a;"b;c"', ";", None, ["a", '"b', 'c"']),
        ("a;'b;c'", ";", "'", ["a", "b;c"]),
    ],
)
def test_cells(text: str, delimiter: str, quotechar: str | None, cells: list[str]) -> None:
    assert _cells(text, delimiter, quotechar) == cells


def test_cells_that_cannot_be_split_say_why() -> None:
    limit = csv.field_size_limit()
    why = _cells("x" * (limit + 1), ",", '"')
    assert isinstance(why, str) and why.startswith("its cells cannot be split (field larger")


def test_every_alignment_of_one_cell_too_many() -> None:
    assert _alignments(["a", "b", "c"], ["X", "Y"], ";") == [
        {"X": "a", "Y": "b"},
        {"X": "b", "Y": "c"},
        {"X": "a;b", "Y": "b;c"},
    ]


def test_every_alignment_of_two_cells_too_many() -> None:
    got = _alignments(["a", "b", "c", "d", "e"], ["X", "Y", "Z"], ",")
    assert isinstance(got, list) and len(got) == 6  # (w, s): (1, 0..2), (2, 0..1), (3, 0)
    assert got[0] == {"X": "a", "Y": "b", "Z": "c"} and got[2] == {"X": "c", "Y": "d", "Z": "e"}
    assert got[-1] == {"X": "a,b,c", "Y": "b,c,d", "Z": "c,d,e"}


def test_as_many_cells_as_columns_is_one_alignment() -> None:
    assert _alignments(["a", "b"], ["X", "Y"], ",") == [{"X": "a", "Y": "b"}]


@pytest.mark.parametrize(
    ("n", "m", "why"),
    [
        (
            1,
            2,
            "it has 1 cells for 2 columns: a delimiter is missing, so its key may be merged"
            " with another cell",
        ),
        (4, 2, "it has 4 cells for 2 columns: it may hold more than one row"),
        (
            MAX_SHIFT + 2,
            1,
            f"it has {MAX_SHIFT + 2} cells for 1 columns: its key cannot be told apart",
        ),
    ],
)
def test_lines_whose_keys_cannot_be_trusted(n: int, m: int, why: str) -> None:
    assert _alignments(["c"] * n, [f"C{j}" for j in range(m)], ",") == why


def test_up_to_max_shift_cells_too_many_are_aligned() -> None:
    got = _alignments(["c"] * (MAX_SHIFT + 1), ["X"], ",")
    assert isinstance(got, list) and len(got) == (MAX_SHIFT + 1) * (MAX_SHIFT + 2) // 2
    three = _alignments(["a", "b", "c"], ["X", "Y"], ",")
    assert isinstance(three, list)  # 3 cells for 2 columns is under twice as many
    # one column: two cells are one too many, not two rows
    assert _alignments(["a", "b"], ["X"], ",") == [{"X": "a"}, {"X": "b"}, {"X": "a,b"}]


def test_a_line_without_a_mapper_keeps_its_values_and_reasons() -> None:
    r = bad_row(BadLine(4, "a,b,c", "malformed line"), "f.csv", ["X", "Y"])
    assert r.source.values == {"X": "a", "Y": "b", "_extra_cells": ["c"]}
    assert r.salvage is not None and r.salvage.keys == [None, None, None]
    assert r.salvage.alignments == [
        {"X": "a", "Y": "b"},
        {"X": "b", "Y": "c"},
        {"X": "a,b", "Y": "b,c"},
    ]
    quoted = bad_row(BadLine(4, 'a,"b,c"', "malformed line"), "f.csv", ["X", "Y", "Z"])
    assert quoted.source.values == {"X": "a", "Y": "b,c"}
    few = bad_row(BadLine(4, "a", "malformed line"), "f.csv", ["X", "Y"])
    assert few.source.values == {"X": "a"}
    assert few.salvage == Salvage(
        [],
        [],
        "line 4: it has 1 cells for 2 columns: a delimiter is missing, so its key may be merged"
        " with another cell",
    )
    assert (few.source.source_file, few.source.source_row) == ("f.csv", 4)
    even = bad_row(BadLine(4, "a,b", "malformed line"), "f.csv", ["X", "Y"])
    assert even.source.values == {"X": "a", "Y": "b"}  # no _extra_cells
    hiding = bad_row(BadLine(4, "a,b", "malformed line", "swallowed"), "f.csv", ["X", "Y"])
    assert hiding.salvage == Salvage([], [], "swallowed")


def test_a_line_that_cannot_be_split_keeps_its_text_and_says_how_to_fix_it() -> None:
    text = "x" * (csv.field_size_limit() + 1)
    r = bad_row(BadLine(4, text, "malformed line"), "f.csv", ["X"])
    assert r.source.values == {"_line": "x" * 200}
    assert (r.source.source_file, r.source.source_row) == ("f.csv", 4)
    assert r.error is not None and r.error.startswith("line 4: malformed line; its cells cannot")
    assert r.error.endswith(": fix the quoting of line 4 in the source")
    assert r.salvage is not None and r.salvage.hides is not None
    assert r.salvage.hides.startswith("line 4: its cells cannot be split (")
    assert (r.salvage.alignments, r.salvage.keys) == ([], [])


def test_cells_are_split_with_the_sources_quote() -> None:
    cfg = MappingConfig.model_validate(
        yaml.safe_load(
            "object_type: contacts\nsource: {path: m.csv, quotechar: null}\nname: Name\n"
            "fields: {email: Email}\n"
        )
    )
    mapper = BatchMapper(cfg, base_dir=Path("."), schema=None, users=None)
    r = bad_row(BadLine(4, 'a,"b,c"', "malformed line"), "f.csv", ["Name", "Email"], mapper)
    assert r.source.values == {"Name": "a", "Email": '"b', "_extra_cells": ['c"']}


LEDGER = (
    "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
    "fields: {email: Email}\nledger_key: {column: Ext}\nmirror_deletes: {enabled: true}\n"
)


def test_a_ledger_key_with_an_unreadable_character_hides_the_key() -> None:
    cfg = MappingConfig.model_validate(yaml.safe_load(LEDGER))
    mapper = BatchMapper(cfg, base_dir=Path("."), schema=None, users=None)
    columns = ["Name", "Email", "Ext"]
    bad = bad_row(
        BadLine(4, "Ben,ben@m.example,E\ufffd1,x", "malformed line"), "f.csv", columns, mapper
    )
    assert bad.salvage == Salvage(
        [], [], "line 4: its ledger key column 'Ext' holds a character that could not be read"
    )
    # the unreadable character elsewhere in the line: every key it may hold is kept
    fine = bad_row(
        BadLine(4, "B\ufffdn,ben@m.example,E1,x", "malformed line"), "f.csv", columns, mapper
    )
    assert fine.salvage is not None and fine.salvage.hides is None
    assert "email:ben@m.example" in fine.salvage.keys and len(fine.salvage.alignments) == 3
    # an empty ledger key cell is read as empty, not as unreadable
    empty = bad_row(BadLine(4, "Ben,ben@m.example,,", "malformed line"), "f.csv", columns, mapper)
    assert empty.salvage is not None and empty.salvage.hides is None

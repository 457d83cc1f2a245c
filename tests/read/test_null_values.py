"""``source.null_values``: cells that stand for no value, null in every reader's batches."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import SourceConfig, load_mapping
from recordsync.core.errors import ConfigError
from recordsync.read import iter_source


def rows(src: SourceConfig, base: Path) -> list[tuple[int, dict[str, object]]]:
    out: list[tuple[int, dict[str, object]]] = []
    for sb in iter_source(src, base):
        out += list(zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True))
    return out


def test_csv_cells_spelled_as_declared_are_null_and_others_stay(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text(
        "Name,Region,Fax\nAnn,NULL,  N/A \nBob,WA,null\nNULL x,\"NULL\",030\n", encoding="utf-8"
    )
    got = rows(SourceConfig(path="s.csv", null_values=["NULL", "N/A"]), tmp_path)
    assert got == [
        (2, {"Name": "Ann", "Region": None, "Fax": None}),  # trimmed, then exact
        (3, {"Name": "Bob", "Region": "WA", "Fax": "null"}),  # another spelling: declared apart
        (4, {"Name": "NULL x", "Region": None, "Fax": "030"}),  # whole cells only
    ]
    plain = rows(SourceConfig(path="s.csv"), tmp_path)
    assert plain[0][1]["Region"] == "NULL"  # nothing declared: nothing changed


def test_parquet_text_columns_honour_it_and_other_types_are_left_alone(tmp_path: Path) -> None:
    table = pa.table({"Name": ["Ann", "N/A"], "Score": [1, 2], "Note": [None, "N/A"]})
    pq.write_table(table, tmp_path / "s.parquet")
    got = rows(SourceConfig(path="s.parquet", null_values=["N/A"]), tmp_path)
    assert [r for _n, r in got] == [
        {"Name": "Ann", "Score": 1, "Note": None},
        {"Name": None, "Score": 2, "Note": None},
    ]


def test_an_unquoted_yaml_null_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("Name\nAnn\n", encoding="utf-8")
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource:\n  path: s.csv\n  null_values: [NULL, N/A]\n"
        "name: {column: Name}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as exc:
        load_mapping(tmp_path / "m.yaml")
    assert "m.yaml:4" in str(exc.value) and "source.null_values" in str(exc.value)
    assert 'quote it, e.g. ["NULL", "N/A"]' in str(exc.value)
    with pytest.raises(ValueError, match="non-blank"):
        SourceConfig(path="s.csv", null_values=[" "])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["NULL", "N/A", "x", "NULLx", " NULL", ""]), min_size=1))
def test_exactly_the_declared_cells_become_null(cells: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        pq.write_table(pa.table({"c": cells}), base / "s.parquet")
        got = [r["c"] for _n, r in rows(SourceConfig(path="s.parquet", null_values=["NULL"]), base)]
    assert got == [None if c.strip() == "NULL" else c for c in cells]

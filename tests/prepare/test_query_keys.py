"""A query source's key identifies its rows: a row without one is invalid, two rows with one
key are duplicates (the key is the ledger key), like any other row problem."""

from __future__ import annotations

from pathlib import Path

from recordsync.config import load_mapping
from recordsync.core.model import RowStatus
from recordsync.prepare import prepare_step

QUERY = """SELECT * FROM (VALUES
    (3, 'Cy', 'cy@x.org'), (1, 'Ann', 'ann@x.org'), (NULL, 'Nokey', 'no@x.org'),
    (2, 'Bo', 'bo@x.org'), (2, 'Bo again', 'bo2@x.org')) t(id, name, email)"""


def test_null_and_repeated_keys_are_reported_not_sent(tmp_path: Path) -> None:
    body = QUERY.replace("\n", "\n    ")
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource:\n  key: id\n  query: |\n    "
        + body
        + "\nname: {column: name}\nmatch_by: email\nfields:\n  email: email\n",
        encoding="utf-8",
    )
    mapping = load_mapping(tmp_path / "m.yaml")
    rows = list(prepare_step(mapping, base_dir=tmp_path, schema=None, users=None))
    got = [(r.source.source_row, r.source.values["id"], r.status) for r in rows]
    assert got == [
        (1, 1, RowStatus.VALID),
        (2, 2, RowStatus.DUPLICATE),
        (3, 2, RowStatus.VALID),  # duplicates: last
        (4, 3, RowStatus.VALID),
        (5, None, RowStatus.INVALID),  # NULLS LAST in key order
    ]
    assert rows[1].error is not None and "duplicate ledger key '2' (column 'id')" in rows[1].error
    assert rows[4].error == (
        "key column 'id' is empty: a row of query:duckdb needs its key (source.key) to be told"
        " apart across runs; fix the query or the data"
    )
    assert {r.source.source_file for r in rows} == {"query:duckdb"}


def test_a_multi_line_value_of_a_query_never_stops_mirror_deletes(tmp_path: Path) -> None:
    """Only a CSV quote can swallow rows: a query's text with newlines and commas is data."""
    (tmp_path / "m.yaml").write_text(
        "object_type: contacts\nsource:\n  key: id\n  query: >-\n"
        "    SELECT 1 AS id, 'Ann' AS name, 'a@x.org' AS email,\n"
        "    'line one' || chr(10) || 'a,b,c,d,e' AS note\n"
        "name: {column: name}\nmatch_by: email\nfields:\n  email: email\n"
        "  description: note\nmirror_deletes: {enabled: true}\n",
        encoding="utf-8",
    )
    mapping = load_mapping(tmp_path / "m.yaml")
    (row,) = prepare_step(mapping, base_dir=tmp_path, schema=None, users=None)
    assert row.status is RowStatus.VALID and row.salvage is None

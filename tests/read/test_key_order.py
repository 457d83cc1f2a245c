"""DuckDB query sources already in key order are read without ORDER BY (read/key_order.py,
read/sql.py): the same rows and row numbers as the sorted read, a sort whenever the order is
in doubt, and a clear error when the rows go back while read unsorted."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recordsync.read.sql as sql_module
from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source
from recordsync.read.key_order import KeyOrder
from recordsync.read.sql import _duckdb_connect, duckdb_record_batches
from recordsync.read.sql_text import wrapped_query


def _src(**kw: object) -> SourceConfig:
    return SourceConfig.model_validate({"key": "id", **kw})


class _Spy:
    """The SQL of each row read (``duckdb_record_batches``: the pass's read; the key-order
    check reads on its own)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statements: list[str] = []
        real = sql_module.duckdb_record_batches

        def spy(con: Any, sql: str, params: Any = None, *, batch_rows: int) -> Iterator[Any]:
            self.statements.append(sql)
            return real(con, sql, params, batch_rows=batch_rows)

        monkeypatch.setattr(sql_module, "duckdb_record_batches", spy)

    def sorted(self) -> list[bool]:
        return ["ORDER BY" in s for s in self.statements]


def _read(src: SourceConfig, base: Path, columns: list[str] | None = None) -> list[Any]:
    """(source_row, row) of every row read."""
    out: list[Any] = []
    for sb in iter_source(src, base, columns):
        out.extend(zip((int(r) for r in sb.rows), sb.batch.to_pylist(), strict=True))
    return out


def _write(base: Path, name: str, columns: dict[str, Any], schema: pa.Schema) -> None:
    pq.write_table(pa.table(columns, schema=schema), base / name, row_group_size=3)


INT_TEXT = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_a_parquet_file_in_key_order_is_read_without_order_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = list(range(1, 11))
    _write(tmp_path, "p.parquet", {"id": ids, "name": [f"P{i}" for i in ids]}, INT_TEXT)
    spy = _Spy(monkeypatch)
    src = _src(query="SELECT * FROM 'p.parquet'", batch_size=4)
    got = _read(src, tmp_path)
    assert spy.sorted() == [False]
    assert got == [(i, {"id": i, "name": f"P{i}"}) for i in ids]
    assert _read(src, tmp_path, ["name"])[0] == (1, {"name": "P1", "id": 1})


def test_rows_out_of_key_order_are_sorted_and_numbered_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [1, 2, 3, 5, 4, 6]  # one row back, late in the file
    _write(tmp_path, "p.parquet", {"id": ids, "name": [f"P{i}" for i in ids]}, INT_TEXT)
    spy = _Spy(monkeypatch)
    got = _read(_src(query="SELECT * FROM 'p.parquet'", batch_size=2), tmp_path)
    assert spy.sorted() == [True]
    assert got == [(n, {"id": i, "name": f"P{i}"}) for n, i in enumerate(range(1, 7), 1)]


def test_a_composite_key_is_checked_column_after_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pa.schema([("k1", pa.int32()), ("k2", pa.string())])
    ordered = {"k1": [1, 1, 2, 2, 2, 3], "k2": ["a", "b", "a", "a", "c", "a"]}
    _write(tmp_path, "ok.parquet", ordered, schema)
    back = {"k1": [1, 1, 2, 2, 2, 3], "k2": ["a", "b", "b", "a", "c", "a"]}  # k2 back in k1=2
    _write(tmp_path, "back.parquet", back, schema)
    spy = _Spy(monkeypatch)
    key = ["k1", "k2"]
    ok = _read(_src(query="SELECT * FROM 'ok.parquet'", key=key, batch_size=2), tmp_path)
    pairs = zip(*ordered.values(), strict=True)
    assert [r for _, r in ok] == [{"k1": a, "k2": b} for a, b in pairs]
    got = _read(_src(query="SELECT * FROM 'back.parquet'", key=key, batch_size=2), tmp_path)
    assert spy.sorted() == [False, True]
    assert [(r["k1"], r["k2"]) for _, r in got] == sorted(zip(*back.values(), strict=True))
    assert [n for n, _ in got] == list(range(1, 7))


def test_null_keys_come_last_as_in_the_sorted_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    last = {"id": [1, 2, None, None], "name": ["a", "b", "c", "d"]}
    _write(tmp_path, "last.parquet", last, INT_TEXT)
    first = {"id": [None, 1, 2], "name": ["c", "a", "b"]}
    _write(tmp_path, "first.parquet", first, INT_TEXT)
    spy = _Spy(monkeypatch)
    got = _read(_src(query="SELECT * FROM 'last.parquet'"), tmp_path)
    assert [(n, r["id"]) for n, r in got] == [(1, 1), (2, 2), (3, None), (4, None)]
    got = _read(_src(query="SELECT * FROM 'first.parquet'"), tmp_path)
    assert [(n, r["id"], r["name"]) for n, r in got] == [(1, 1, "a"), (2, 2, "b"), (3, None, "c")]
    assert spy.sorted() == [False, True]


def test_keys_duckdb_orders_otherwise_than_arrow_keep_the_sort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "crm.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people (id VARCHAR COLLATE NOCASE, score DOUBLE, plain VARCHAR)")
    # in byte order (B < a), not in the column's order (a < B)
    con.execute(
        "INSERT INTO people VALUES ('B', 1.0, 'B'), ('a', 2.0, 'a'), ('c', 'nan', 'c'),"
        " ('d', 0.5, 'd')"
    )
    con.close()
    spy = _Spy(monkeypatch)
    got = _read(_src(query="SELECT * FROM people", database="crm.duckdb"), tmp_path)
    assert [r["id"] for _, r in got] == ["a", "B", "c", "d"]
    got = _read(_src(query="SELECT * FROM people", database="crm.duckdb", key="score"), tmp_path)
    assert [r["id"] for _, r in got] == ["d", "B", "a", "c"]  # NaN sorts last in DuckDB
    plain = _read(_src(query="SELECT * FROM people", database="crm.duckdb", key="plain"),
                  tmp_path)  # without a collation, byte order: read as it comes
    assert [r["id"] for _, r in plain] == ["B", "a", "c", "d"]
    assert spy.sorted() == [True, True, False]


def test_rows_that_go_back_during_an_unsorted_read_end_it_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = list(range(1, 9))
    _write(tmp_path, "p.parquet", {"id": ids, "name": [f"P{i}" for i in ids]}, INT_TEXT)
    real = sql_module.duckdb_record_batches

    def rewritten(con: Any, sql: str, params: Any = None, *, batch_rows: int) -> Iterator[Any]:
        # the file is written again between the key-order check and the pass's read
        back = [1, 2, 3, 4, 5, 7, 6, 8]
        _write(tmp_path, "p.parquet", {"id": back, "name": [f"P{i}" for i in back]}, INT_TEXT)
        return real(con, sql, params, batch_rows=batch_rows)

    monkeypatch.setattr(sql_module, "duckdb_record_batches", rewritten)
    src = _src(query="SELECT * FROM 'p.parquet'", name="contacts", batch_size=4)
    with pytest.raises(SourceError, match="row 7 of the query came out of key order") as info:
        _read(src, tmp_path)
    assert "query:contacts" in str(info.value) and info.value.key == "source.query"
    assert info.value.hint is not None and "no longer being written" in info.value.hint
    # the next pass finds the rows out of order, and sorts them
    monkeypatch.setattr(sql_module, "duckdb_record_batches", real)
    assert [r["id"] for _, r in _read(src, tmp_path)] == ids


def _sorted_read(src: SourceConfig, base: Path) -> list[Any]:
    """(source_row, row) as the read with ORDER BY gives them."""
    con = _duckdb_connect(src, base)
    try:
        sql = wrapped_query(src, None)
        batches = duckdb_record_batches(con, sql, None, batch_rows=7)
        rows = [r for b in batches for r in b.to_pylist()]
    finally:
        con.close()
    return list(enumerate(rows, 1))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.integers(-3, 3) | st.none(),
            st.text(alphabet="aAbB\u00e9 ", max_size=2) | st.none(),
        ),
        max_size=30,
    ),
    st.booleans(),
    st.sampled_from([["k1"], ["k2"], ["k1", "k2"]]),
    st.integers(1, 5),
)
def test_any_table_is_read_as_the_sorted_read_numbers_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keys: list[tuple[int | None, str | None]],
    presort: bool,
    key: list[str],
    batch_size: int,
) -> None:
    def order(row: tuple[int | None, str | None]) -> tuple[Any, ...]:
        pick = [row[0] if k == "k1" else row[1] for k in key]
        return tuple(x for v in pick for x in (v is None, v if v is not None else 0))

    if presort:  # in key order (NULLs last) more often than chance would give
        keys = sorted(keys, key=order)
    in_order = keys == sorted(keys, key=order)
    schema = pa.schema([("k1", pa.int64()), ("k2", pa.string()), ("n", pa.int64())])
    table = {"k1": [k for k, _ in keys], "k2": [t for _, t in keys], "n": list(range(len(keys)))}
    _write(tmp_path, "t.parquet", table, schema)
    src = _src(query="SELECT * FROM 't.parquet'", key=key, batch_size=batch_size)
    with monkeypatch.context() as patch:
        spy = _Spy(patch)
        got = _read(src, tmp_path)
    assert spy.sorted() == [not in_order]
    want = _sorted_read(src, tmp_path)
    assert [n for n, _ in got] == [n for n, _ in want] == list(range(1, len(keys) + 1))

    def key_of(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in key)

    def tied(rows: list[Any]) -> list[list[int]]:
        """The rows' ``n`` in runs of equal keys, each run sorted: ORDER BY leaves the order
        of rows whose keys tie to the database (DuckDB's sort may swap them)."""
        return [sorted(r["n"] for r in run) for _, run in groupby((r for _, r in rows), key_of)]

    assert [key_of(r) for _, r in got] == [key_of(r) for _, r in want]
    assert tied(got) == tied(want)
    assert sorted(r["n"] for _, r in got) == list(range(len(keys)))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2) | st.none(), st.integers(0, 2) | st.none()), max_size=20),
    st.lists(st.integers(1, 6), max_size=8),
)
def test_key_order_finds_the_first_row_that_goes_back(
    rows: list[tuple[int | None, int | None]], cuts: list[int]
) -> None:
    def rank(row: tuple[int | None, int | None]) -> tuple[tuple[bool, int], ...]:
        return tuple((v is None, v or 0) for v in row)  # ascending, NULLs last

    want = next((i + 1 for i in range(1, len(rows)) if rank(rows[i]) < rank(rows[i - 1])), None)
    check = KeyOrder(["a", "b"])
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    found, at = None, 0
    for size in [*cuts, len(rows)]:
        part = rows[at : at + size]
        at += size
        batch = pa.record_batch([[r[0] for r in part], [r[1] for r in part]], schema=schema)
        at_break = check.first_break(batch)
        found = found or at_break
    assert found == want
    assert check.rows == len(rows)

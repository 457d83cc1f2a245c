"""DuckDB query sources: rows in key order, numbered 1.., in batches of batch_size."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source, source_columns, sql
from recordsync.read.sql import _duckdb_connect, duckdb_record_batches


def _people(base: Path, n: int = 10) -> None:
    ids = list(range(n, 0, -1))  # stored in reverse: the key orders them
    names, emails = [f"P{i}" for i in ids], [f"p{i}@x.org" for i in ids]
    pq.write_table(pa.table({"id": ids, "name": names, "email": emails}), base / "people.parquet")


def _src(**kw: object) -> SourceConfig:
    return SourceConfig.model_validate({"key": "id", **kw})


def test_a_query_over_a_local_file_streams_in_key_order(tmp_path: Path) -> None:
    _people(tmp_path)
    src = _src(query="SELECT id, name, email FROM 'people.parquet' WHERE id > 2", batch_size=3)
    batches = list(iter_source(src, tmp_path))
    assert [b.batch.num_rows for b in batches] == [3, 3, 2]
    assert all(b.file == "query:duckdb" for b in batches)
    ids = [i for b in batches for i in b.batch.column("id").to_pylist()]
    rows = [int(r) for b in batches for r in b.rows]
    assert ids == list(range(3, 11)) and rows == list(range(1, 9))
    assert source_columns(src, tmp_path) == ["id", "name", "email"]


def test_narrowed_columns_still_read_the_key(tmp_path: Path) -> None:
    _people(tmp_path)
    src = _src(query="SELECT * FROM read_parquet('people.parquet')", batch_size=4)
    batches = list(iter_source(src, tmp_path, ["email"]))
    assert batches[0].batch.schema.names == ["email", "id"]
    assert batches[0].batch.column("email").to_pylist()[0] == "p1@x.org"


def test_a_composite_key_orders_by_each_column(tmp_path: Path) -> None:
    src = _src(
        query="SELECT * FROM (VALUES (2, 'b'), (1, 'z'), (2, 'a'), (1, 'y')) t(k1, k2)",
        key=["k1", "k2"],
    )
    (sb,) = list(iter_source(src, tmp_path))
    assert sb.batch.to_pylist() == [
        {"k1": 1, "k2": "y"}, {"k1": 1, "k2": "z"}, {"k1": 2, "k2": "a"}, {"k1": 2, "k2": "b"}
    ]


def test_a_duckdb_database_file_is_opened_read_only(tmp_path: Path) -> None:
    db = tmp_path / "crm.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT range AS id, 'P' || range AS name FROM range(5)")
    con.close()
    src = _src(query="SELECT * FROM people", database="crm.duckdb", name="crm")
    (sb,) = list(iter_source(src, tmp_path))
    assert sb.file == "query:crm" and sb.batch.num_rows == 5
    bad = _src(query="DELETE FROM people RETURNING id", database="crm.duckdb")
    with pytest.raises(SourceError, match="the DuckDB query failed"):
        list(iter_source(bad, tmp_path))
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM people").fetchone() == (5,)
    con.close()


def test_a_missing_key_column_a_bad_query_and_a_missing_database_name_the_option(
    tmp_path: Path,
) -> None:
    _people(tmp_path)
    with pytest.raises(SourceError, match=r"key column\(s\) 'id' not in") as info:
        source_columns(_src(query="SELECT name FROM 'people.parquet'"), tmp_path)
    assert info.value.key == "source.key"
    with pytest.raises(SourceError, match="the DuckDB query failed") as info:
        source_columns(_src(query="SELECT * FROM 'nowhere.parquet'"), tmp_path)
    assert info.value.key == "source.query"
    with pytest.raises(SourceError, match="DuckDB database not found") as info:
        source_columns(_src(query="SELECT 1 AS id", database="none.duckdb"), tmp_path)
    assert info.value.key == "source.database"


@pytest.mark.parametrize(
    ("engine", "module", "package", "extra"),
    [
        ("duckdb", "duckdb", "duckdb", "duckdb"),
        ("postgres", "adbc_driver_postgresql.dbapi", "adbc-driver-postgresql", "postgres"),
    ],
)
def test_a_missing_engine_package_names_the_extra(
    engine: str,
    module: str,
    package: str,
    extra: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    monkeypatch.setenv("SOME_DSN", "postgresql://app@db/crm")
    more = {"engine": "postgres", "dsn_env": "SOME_DSN"} if engine == "postgres" else {}
    with pytest.raises(SourceError, match=f"needs the Python package '{package}'") as info:
        source_columns(_src(query="SELECT 1 AS id", **more), tmp_path)
    assert info.value.hint == f"pip install 'recordsync[{extra}]'"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(st.integers(-(2**40), 2**40), st.text(max_size=12) | st.none(), max_size=40),
    st.integers(1, 7),
)
def test_a_query_gives_back_every_row_in_key_order(
    tmp_path: Path, rows: dict[int, str | None], batch_size: int
) -> None:
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    table = pa.table({"id": list(rows), "text": list(rows.values())}, schema=schema)
    pq.write_table(table, tmp_path / "t.parquet")
    src = _src(query="SELECT * FROM 't.parquet'", batch_size=batch_size)
    batches = list(iter_source(src, tmp_path))
    assert all(0 < b.batch.num_rows <= batch_size for b in batches)
    got = [r for b in batches for r in b.batch.to_pylist()]
    assert got == [{"id": k, "text": rows[k]} for k in sorted(rows)]
    assert [int(n) for b in batches for n in b.rows] == list(range(1, len(rows) + 1))


@pytest.mark.parametrize("params", [None, [3]])
def test_the_duckdb_seam_streams_any_sql_in_its_own_order(params: list[int] | None) -> None:
    con = duckdb.connect()
    where = "i > ?" if params else "i > 3"
    sql = f"SELECT i, i % 3 AS k FROM range(20) t(i) WHERE {where} ORDER BY k DESC, i"
    batches = list(duckdb_record_batches(con, sql, params, batch_rows=4))
    assert all(0 < b.num_rows <= 4 for b in batches)
    got = [(r["i"], r["k"]) for b in batches for r in b.to_pylist()]
    assert got == sorted(((i, i % 3) for i in range(4, 20)), key=lambda r: (-r[1], r[0]))


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> object:
    row = con.execute(f"SELECT current_setting('{name}')").fetchone()
    assert row is not None
    return row[0]


def test_the_connection_is_bounded_by_the_source_options(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    con = _duckdb_connect(_src(query="SELECT 1 AS id", memory_limit="200MB"), tmp_path, str(spill))
    try:
        assert "190" in str(_setting(con, "memory_limit"))  # DuckDB shows 200MB as 190.7 MiB
        assert _setting(con, "threads") == 1
        assert _setting(con, "enable_progress_bar") is False
        assert _setting(con, "temp_directory") == str(spill)
        # the result computed ahead of the batch asked for: 1MB, not DuckDB's 10 MiB
        assert _setting(con, "streaming_buffer_size") == "976.5 KiB"
    finally:
        con.close()
    con = _duckdb_connect(_src(query="SELECT 1 AS id"), tmp_path)
    try:
        assert "122" in str(_setting(con, "memory_limit"))  # the default, 128MB
    finally:
        con.close()


def test_a_duckdb_without_a_memory_saving_setting_reads_the_rows_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an older DuckDB than ours, which does not know the last (optional) setting
    bounded = sql.duckdb_settings

    def older(src: SourceConfig) -> list[str]:
        return [*bounded(src)[:-1], "SET no_such_setting_of_this_duckdb = '1MB'"]

    monkeypatch.setattr(sql, "duckdb_settings", older)
    src = _src(query="SELECT i AS id FROM range(5) t(i)", memory_limit="64MB")
    con = _duckdb_connect(src, tmp_path)
    try:
        assert "61" in str(_setting(con, "memory_limit"))  # the settings before it are set
    finally:
        con.close()
    got = [r["id"] for sb in iter_source(src, tmp_path) for r in sb.batch.to_pylist()]
    assert got == [0, 1, 2, 3, 4]


def test_a_query_out_of_memory_names_source_memory_limit(tmp_path: Path) -> None:
    big = "SELECT 1 AS id, string_agg(repeat('x', 200) || range::text, ',') AS s FROM range(200000)"
    with pytest.raises(SourceError, match=r"ran out of its working memory \(16MB\)") as info:
        list(iter_source(_src(query=big, memory_limit="16MB"), tmp_path))
    assert info.value.key == "source.memory_limit"
    assert info.value.hint is not None and "raise source.memory_limit" in info.value.hint
    (sb,) = list(iter_source(_src(query=big, memory_limit="512MB"), tmp_path))
    assert sb.batch.num_rows == 1

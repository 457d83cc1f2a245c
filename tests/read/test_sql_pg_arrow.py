"""PostgreSQL read straight into Arrow (read/sql_pg.py) against the real server the tests
start: every type a value of the same kind as psycopg reads it (the old per-value path's
rule: integers, floats, booleans, dates and timestamps typed; every other type the text
PostgreSQL writes), the seam other readers use (SQL + parameters in, batches in the SQL's
order out), and errors that name the source without the password."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.pg_support import PASSWORD, database_url

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source
from recordsync.read.sql_pg import pg_record_batches, rebatch

COLUMNS = {
    "i2": "smallint", "i4": "integer", "i8": "bigint", "f4": "real", "f8": "double precision",
    "b": "boolean", "tx": "text", "vc": "varchar(10)", "ch": "char(3)", "nm": "name",
    "d": "date", "ts": "timestamp", "tstz": "timestamptz", "num": "numeric(9,2)",
    "numx": "numeric", "js": "json", "jb": "jsonb", "u": "uuid", "tm": "time", "tmtz": "timetz",
    "iv": "interval", "ia": "integer[]", "ta": "text[]", "by": "bytea", "ip": "inet",
    "mo": "money", "o": "oid",
}
TYPED = {"i2", "i4", "i8", "f4", "f8", "b", "tx", "vc", "ch", "nm", "d", "ts", "tstz"}
"""Columns with an Arrow type of their own; the others arrive as PostgreSQL's text."""
ROWS = [
    "1, -32768, -2147483648, -9223372036854775808, 0.1, 0.1, true, 'héllo wörld', 'v',"
    " 'ab', 'nm', '0001-01-01', '0001-01-01 00:00:00', '2021-03-04 05:06:07.123456+02',"
    " 12.50, 1e30, '{\"a\": [1, 2]}', '{\"b\": 1, \"a\": 2}',"
    " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '12:34:56.5', '12:34:56+05',"
    " '1 day 02:03:04', '{1,2,NULL}', '{\"a b\",c}', '\\x00ff', '10.0.0.1/8', 12.34, 42",
    "2, 32767, 2147483647, 9223372036854775807, 'Infinity', '-Infinity', false,"
    " E'two\\nlines, \"quoted\"', '', '', '', '9999-12-31', '9999-12-31 23:59:59.999999',"
    " '1970-01-01 00:00:00+00', -0.01, 'NaN', '[]', '{}', '00000000-0000-0000-0000-000000000000',"
    " '00:00', '23:59:59-11', '-3 mons', '{}', '{}', '\\x', '::1', -1, 0",
    "3" + ", NULL" * len(COLUMNS),
    "4, 0, 0, 0, 'NaN', 1.7976931348623157e308, NULL, ' ', NULL, ' ', NULL, '2020-02-29',"
    " '2020-02-29 12:00:00.5', '2020-02-29 23:30:00-05:30', 0, 0.000001, 'null', 'null',"
    " NULL, NULL, NULL, '1 year', NULL, '{NULL}', NULL, NULL, 0, NULL",
]


@pytest.fixture
def every_type(pg_url: str) -> str:
    """A table ``t`` with a column of each supported type, inserted in reverse key order."""
    ddl = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE t (id int PRIMARY KEY, {ddl})")
        for row in reversed(ROWS):
            conn.execute(f"INSERT INTO t VALUES ({row})".encode())
    return pg_url


def _expected(url: str) -> list[dict[str, Any]]:
    """The rows as psycopg reads them: typed columns as its Python values, the others as the
    text the server writes for them."""
    cols = ", ".join(c if c in TYPED else f"{c}::text AS {c}" for c in COLUMNS)
    with psycopg.connect(url) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        cur = conn.execute(f"SELECT id, {cols} FROM t ORDER BY id")
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and type(a) is type(b)


def test_every_type_arrives_as_psycopg_reads_it(
    every_type: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("T_DSN", every_type)
    src = SourceConfig.model_validate(
        {"engine": "postgres", "dsn_env": "T_DSN", "key": "id", "query": "SELECT * FROM t",
         "batch_size": 3}
    )
    batches = [b.batch for b in iter_source(src, tmp_path)]
    assert [b.num_rows for b in batches] == [3, 1]
    got = [r for b in batches for r in b.to_pylist()]
    want = _expected(every_type)
    assert [r["id"] for r in got] == [1, 2, 3, 4]
    diff = [
        (w["id"], c, w[c], g[c])
        for w, g in zip(want, got, strict=True)
        for c in w
        if not _same(w[c], g[c])
    ]
    assert diff == []
    schema = batches[0].schema
    assert {f.name: str(f.type) for f in schema if f.name in TYPED} == {
        "i2": "int64", "i4": "int64", "i8": "int64", "f4": "double", "f8": "double",
        "b": "bool", "tx": "string", "vc": "string", "ch": "string", "nm": "string",
        "d": "date32[day]", "ts": "timestamp[us]", "tstz": "timestamp[us, tz=UTC]",
    }
    assert all(pa.types.is_string(f.type) for f in schema if f.name not in TYPED | {"id"})
    assert all(not f.metadata for f in schema)  # the driver's annotations are not passed on


@pytest.mark.parametrize(
    ("column", "value"),
    [("d", "infinity"), ("d", "0044-03-15 BC"), ("ts", "-infinity"), ("tstz", "10000-01-01")],
)
def test_a_date_no_reader_can_hold_fails_naming_its_column(
    every_type: str, column: str, value: str
) -> None:
    with psycopg.connect(every_type, autocommit=True) as conn:
        conn.execute(f"INSERT INTO t (id, {column}) VALUES (5, '{value}')".encode())
    with pytest.raises(SourceError, match="the PostgreSQL query failed") as info:
        list(pg_record_batches(every_type, "SELECT * FROM t", batch_rows=2, label="query:t"))
    assert f'column "{column}" holds a' in str(info.value)
    assert "outside years 1 to 9999" in str(info.value)
    assert str(info.value).startswith("[source.query]: query:t:")


def test_the_seam_streams_any_sql_with_parameters_in_its_own_order(every_type: str) -> None:
    with psycopg.connect(every_type, autocommit=True) as conn:
        conn.execute("CREATE TABLE big AS SELECT g AS id, g % 7 AS k FROM generate_series(1, 50) g")
    sql = "SELECT id, k FROM big WHERE k <> $1 AND id > $2 ORDER BY k DESC, id"
    batches = list(pg_record_batches(every_type, sql, [3, 4], batch_rows=8, label="q"))
    rows = [(r["id"], r["k"]) for b in batches for r in b.to_pylist()]
    expected = sorted(((i, i % 7) for i in range(5, 51) if i % 7 != 3), key=lambda r: (-r[1], r[0]))
    assert rows == expected
    assert [b.num_rows for b in batches[:-1]] == [8] * (len(batches) - 1)
    inline = sql.replace("$1", "3").replace("$2", "4")
    again = list(pg_record_batches(every_type, inline, batch_rows=8, label="q"))
    assert pa.Table.from_batches(again).equals(pa.Table.from_batches(batches))


def test_closing_the_stream_early_ends_its_session(every_type: str) -> None:
    it = pg_record_batches(
        every_type, "SELECT g FROM generate_series(1, 200000) g", batch_rows=10, label="q"
    )
    assert next(it).num_rows == 10
    it.close()
    with psycopg.connect(every_type) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        ).fetchone()
    assert left == (0,)


def test_errors_name_the_source_and_never_the_password(
    every_type: str, pg_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    name = every_type.split("/")[3].split("?")[0]
    with_password = database_url(pg_server, name, password=PASSWORD)
    monkeypatch.setenv("T_DSN", with_password)
    src = SourceConfig.model_validate(
        {"engine": "postgres", "dsn_env": "T_DSN", "key": "id", "name": "people",
         "query": f"SELECT id, '{PASSWORD}'::int AS n FROM t"}  # the error quotes the value
    )
    with pytest.raises(SourceError) as info:
        list(iter_source(src, tmp_path))
    assert str(info.value).startswith("[source.query]: query:people: the PostgreSQL query failed")
    assert "invalid input syntax for type integer" in str(info.value)
    assert PASSWORD not in str(info.value) and "**********" in str(info.value)
    gone = database_url(pg_server, "no_such_db", password=PASSWORD)
    monkeypatch.setenv("T_DSN", gone)
    with pytest.raises(SourceError, match="cannot connect to PostgreSQL") as info:
        list(iter_source(src, tmp_path))
    assert info.value.key == "source.dsn_env" and PASSWORD not in str(info.value)
    assert str(info.value).startswith("[source.dsn_env]: query:people:")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=12), st.integers(1, 7))
def test_rebatch_keeps_every_row_in_order_in_batches_of_the_size(
    sizes: list[int], rows: int
) -> None:
    start = 0
    batches = []
    for n in sizes:
        batches.append(pa.record_batch({"x": list(range(start, start + n))}))
        start += n
    out = list(rebatch(iter(batches), rows))
    assert [v for b in out for v in b.column(0).to_pylist()] == list(range(start))
    assert all(b.num_rows == rows for b in out[:-1])
    assert not out or 0 < out[-1].num_rows <= rows

"""PostgreSQL query sources against a real server the tests start (tests/read/servers.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import psycopg
import pytest

from recordsync.config.models import SourceConfig
from recordsync.core.errors import ConfigError, SourceError
from recordsync.read import iter_source, source_columns
from recordsync.read.sql_pg import pg_batches


@pytest.fixture
def people(pg_url: str) -> str:
    """A table ``people`` in a database of the test's own; its URL."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE people_seq")
        conn.execute(
            "CREATE TABLE people (id int PRIMARY KEY, name text, score numeric(5,2),"
            " active boolean, born date, seen timestamptz, tags jsonb)"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO people VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [
                    (i, f"P{i}", f"{i}.50", i % 2 == 0, dt.date(2000, 1, i % 28 + 1),
                     dt.datetime(2025, 1, 1, i % 24, tzinfo=dt.UTC), '{"a": 1}')
                    for i in range(25, 0, -1)  # inserted in reverse: the key orders them
                ],
            )
        conn.execute("INSERT INTO people (id) VALUES (100)")  # nulls everywhere else
    return pg_url


def _src(**kw: object) -> SourceConfig:
    return SourceConfig.model_validate(
        {"engine": "postgres", "dsn_env": "TEST_SOURCE_DSN", "key": "id", "name": "people", **kw}
    )


def test_rows_stream_in_key_order_with_column_types(
    people: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_SOURCE_DSN", people)
    src = _src(query="SELECT * FROM people", batch_size=10)
    assert source_columns(src, tmp_path) == [
        "id", "name", "score", "active", "born", "seen", "tags"
    ]
    batches = list(iter_source(src, tmp_path))
    assert [b.batch.num_rows for b in batches] == [10, 10, 6]
    assert {b.file for b in batches} == {"query:people"}
    rows = [r for b in batches for r in b.batch.to_pylist()]
    assert [r["id"] for r in rows] == [*range(1, 26), 100]
    assert [int(n) for b in batches for n in b.rows] == list(range(1, 27))
    first = rows[0]
    assert first["name"] == "P1" and first["score"] == "1.50" and first["active"] is False
    assert first["born"] == dt.date(2000, 1, 2) and first["tags"] == '{"a": 1}'
    assert first["seen"] == dt.datetime(2025, 1, 1, 1, tzinfo=dt.UTC)
    nulls = dict.fromkeys(["name", "score", "active", "born", "seen", "tags"])
    assert rows[-1] == {"id": 100} | nulls
    schema = batches[0].batch.schema
    assert all(b.batch.schema == schema for b in batches)  # one type per column


def test_the_rows_are_copied_out_in_binary_by_a_read_only_session(
    people: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TEST_SOURCE_DSN", people)
    it = pg_batches(_src(query="SELECT * FROM people", batch_size=5), None)  # no read-ahead
    next(it)
    with psycopg.connect(people) as conn:  # the rows leave the server as binary COPY
        queries = conn.execute(
            "SELECT query FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        ).fetchall()
    assert len(queries) == 1 and queries[0][0].startswith("COPY (SELECT")
    assert queries[0][0].rstrip().endswith("TO STDOUT (FORMAT binary)")
    it.close()
    writes = _src(query="SELECT id, nextval('people_seq') AS n FROM people")
    with pytest.raises(SourceError, match="read-only transaction"):
        list(iter_source(writes, tmp_path))


def test_a_missing_variable_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TEST_SOURCE_DSN", raising=False)
    with pytest.raises(ConfigError, match="TEST_SOURCE_DSN is not set") as info:
        source_columns(_src(query="SELECT 1 AS id"), tmp_path)
    assert info.value.key == "source.dsn_env"


def test_connection_and_query_errors_never_show_the_password(
    people: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host = people.split("?", 1)[1]
    monkeypatch.setenv(
        "TEST_SOURCE_DSN", f"postgresql://nobody:s3cretPassw0rd@/nowhere_db?{host}"
    )
    with pytest.raises(SourceError, match="cannot connect to PostgreSQL") as info:
        source_columns(_src(query="SELECT 1 AS id"), tmp_path)
    assert "s3cretPassw0rd" not in str(info.value)
    monkeypatch.setenv("TEST_SOURCE_DSN", people)
    with pytest.raises(SourceError, match="the PostgreSQL query failed") as info:
        source_columns(_src(query="SELECT * FROM no_such_table"), tmp_path)
    assert info.value.key == "source.query"
    with pytest.raises(SourceError, match=r"key column\(s\) 'id' not in"):
        source_columns(_src(query="SELECT name FROM people"), tmp_path)
    with pytest.raises(SourceError, match="duplicate column names: id"):
        source_columns(_src(query="SELECT id, id FROM people"), tmp_path)


def test_a_dsn_without_a_password_may_be_in_the_mapping(people: str, tmp_path: Path) -> None:
    src = SourceConfig.model_validate(
        {"engine": "postgres", "dsn": people, "key": "id", "query": "SELECT id FROM people"}
    )
    assert sum(b.batch.num_rows for b in iter_source(src, tmp_path)) == 26

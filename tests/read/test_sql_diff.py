"""The SQL of change detection in the database (recordsync.read.sql_diff), run by DuckDB:
the row digest tells rows apart exactly when their mapped cells differ, and the diff keeps
the new, changed, vanished and repeated keys (PostgreSQL runs the same diff in
tests/nightly/test_pushdown_pg.py); PostgreSQL's own digests against the session's server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recordsync.read.sql_diff import (
    create_synced,
    diff_table_sql,
    digest_sql,
    literal,
    pg_digest_sql,
)

cells = st.one_of(st.none(), st.text(alphabet="a|:-1\\x'", max_size=4))
rows = st.tuples(cells, cells, cells)


def _digests(con: Any, values: list[tuple[Any, ...]]) -> list[str]:
    con.execute("CREATE OR REPLACE TABLE t (i INT, a TEXT, b TEXT, c TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(i, *v) for i, v in enumerate(values)])
    sql = f"SELECT {digest_sql(['a', 'b', 'c'], b'salt')}::TEXT FROM t AS q ORDER BY i"
    return [str(r[0]) for r in con.execute(sql).fetchall()]


@given(rows, rows)
@example(("a|", "b", None), ("a", "|b", None))  # a separator inside a cell
@example((None, "", "x"), ("-", "", "x"))  # null and its marker
@example(("1:a", None, None), ("1", ":a", None))  # a length prefix inside a cell
def test_equal_digests_mean_equal_cells(x: tuple[Any, ...], y: tuple[Any, ...]) -> None:
    con = duckdb.connect()
    dx, dy = _digests(con, [x, y])
    assert (dx == dy) == (x == y)  # a null, "" and "-" differ; "a|" "b" and "a" "|b" too


def test_the_salt_changes_every_digest() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 'x' AS a")
    one = con.execute(f"SELECT {digest_sql(['a'], b'one')} FROM t AS q").fetchone()
    two = con.execute(f"SELECT {digest_sql(['a'], b'two')} FROM t AS q").fetchone()
    assert one != two


def test_the_diff_keeps_new_changed_vanished_and_repeated_keys() -> None:
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS rs")
    for statement in create_synced("recordsync", "rs."):
        con.execute(statement)
    con.execute(
        "CREATE TABLE src AS SELECT * FROM (VALUES (1, 'same'), (2, 'new value'), (4, 'new'),"
        " (5, 'twice'), (5, 'twice')) AS v(id, x)"
    )
    query = "SELECT id, x FROM src"
    salt = b"s"
    digests = dict(
        con.execute(f"SELECT id::TEXT, {digest_sql(['x', 'id'], salt)} FROM src AS q").fetchall()
    )
    synced = [("1", digests["1"]), ("2", digests["1"]), ("3", digests["1"]), ("5", digests["5"])]
    for key, digest in synced:
        con.execute("INSERT INTO rs.recordsync.synced VALUES (?, ?, ?)", ["sc", key, str(digest)])
    con.execute(diff_table_sql(query, "id", ["x", "id"], salt, "recordsync", "sc", "rs."))
    got = con.execute(
        "SELECT id, _rs_key, _rs_old_key, _rs_digest IS NULL FROM rs.recordsync.diff_sc"
        " ORDER BY coalesce(_rs_key, _rs_old_key)"
    ).fetchall()
    assert got == [
        (2, "2", "2", False),  # changed
        (None, None, "3", True),  # vanished
        (4, "4", None, False),  # new
        (5, "5", "5", False),  # a key held twice: both rows, though one is unchanged
        (5, "5", "5", False),
    ]
    assert literal("it's") == "'it''s'"


@pytest.fixture(scope="module")
def pg(pg_server: str) -> Iterator[Any]:
    """One connection to a fresh database of the session's PostgreSQL for the module."""
    import psycopg
    from tests.pg_support import new_database

    with psycopg.connect(new_database(pg_server), autocommit=True) as c:
        c.execute("SET TIME ZONE 'UTC'")
        yield c


@pytest.mark.parametrize("per_value", [True, False])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(x=rows, y=rows)
@example(x=("a|", "b", None), y=("a", "|b", None))
@example(x=(None, "", "x"), y=("", None, "x"))  # a null and an empty text
@example(x=("a,b", None, None), y=("a", "b", None))  # a separator of the row's text
@example(x=('"', None, None), y=('\\"', None, None))
def test_postgres_digests_tell_rows_apart(pg: Any, per_value: bool, x: Any, y: Any) -> None:
    """PostgreSQL's digests (both forms): equal exactly when the cells are, as text."""
    sql = pg_digest_sql(["a", "b", "c"], b"salt", per_value=per_value)
    got = pg.execute(
        f"SELECT {sql} FROM (VALUES (%s::text, %s::text, %s::text), (%s, %s, %s))"
        " AS q(a, b, c)",
        (*x, *y),
    ).fetchall()
    assert (got[0][0] == got[1][0]) == (x == y)


def test_postgres_digests_follow_the_salt_and_the_values_text(pg: Any) -> None:
    one, two = (pg_digest_sql(["a"], s) for s in (b"one", b"two"))
    q = "FROM (VALUES (1.0::numeric), (1.00::numeric)) AS q(a)"
    a, b = (r[0] for r in pg.execute(f"SELECT {one} {q}").fetchall())
    assert a != b  # equal numbers, another text: another value sent
    assert pg.execute(f"SELECT {one} {q} LIMIT 1").fetchone() != pg.execute(
        f"SELECT {two} {q} LIMIT 1"
    ).fetchone()

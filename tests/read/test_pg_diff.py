"""The source database's side of change detection (recordsync.read.pg_diff): the keys the
service acknowledged reach the table of synced rows through COPY's text form, whatever
they hold; the diff finds exactly the new, changed and vanished keys, in parallel workers
and on a server without any (checked against the session's PostgreSQL)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recordsync.config.mapping_parts import SourceConfig
from recordsync.read.pg_diff import UPDATE_SETTINGS, DigestTable, copy_text, session_settings
from recordsync.read.sql_diff import diff_keys_sql, pg_digest_sql

# any text a key can hold: not NUL (PostgreSQL's text cannot), not a lone surrogate (no UTF-8
# source or Arrow string can)
keys = st.lists(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=6),
    max_size=8,
)


@pytest.fixture(scope="module")
def pg(pg_server: str) -> Iterator[Any]:
    import psycopg
    from tests.pg_support import new_database

    with psycopg.connect(new_database(pg_server), autocommit=True) as conn:
        conn.execute("CREATE TABLE k (n serial, key text)")
        yield conn


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys, st.integers(0, 2))
@example(["a\\b", "c\nd", "e\rf", "g\th", "\\N", "", " "], 1)
@example(["é", "\u2028", "\U0001f600"], 0)
def test_keys_copied_arrive_as_they_are(pg: Any, listed: list[str], skip: int) -> None:
    array = pa.array(["skipped"] * skip + listed, pa.string()).slice(skip)  # an offset too
    pg.execute("TRUNCATE k RESTART IDENTITY")
    with pg.cursor().copy("COPY k (key) FROM STDIN") as copy:
        copy.write(copy_text(array))
    assert [r[0] for r in pg.execute("SELECT key FROM k ORDER BY n").fetchall()] == listed


ROWS = 3000
"""Rows of the diff's table: with parallel plans costed at nothing, enough for workers."""
PARALLEL = (
    "parallel_setup_cost = 0",
    "parallel_tuple_cost = 0",
    "min_parallel_table_scan_size = 0",
    "min_parallel_index_scan_size = 0",
)
"""Database settings under which the planner takes parallel workers for any table."""


def _people(url: str, settings: tuple[str, ...], key_type: str) -> Any:
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    for setting in settings:
        conn.execute(f"ALTER DATABASE {url.split('/')[3].split('?')[0]} SET {setting}")
    conn.execute(f"CREATE TABLE people (id {key_type} PRIMARY KEY, name text, score int)")
    conn.execute(
        f"INSERT INTO people SELECT g::text::{key_type}, 'name ' || g, g % 7"
        f" FROM generate_series(1, {ROWS}) AS g"
    )
    conn.execute("ANALYZE people")
    return conn


def _table(url: str) -> DigestTable:
    src = SourceConfig(
        engine="postgres",
        dsn=url,
        query="SELECT id, name, score FROM people",
        key=["id"],
        change_detection="database",
    )
    table = DigestTable(src, "sc")
    table.open()
    return table


COLUMNS = ["id", "name", "score"]


def _diff(url: str, *, full: bool = False) -> tuple[set[str], set[str], set[str], int]:
    """One diff and the update after it (every row read acknowledged): the keys of the rows
    read with a synced key (changed), without one (new), the vanished keys, and the count of
    synced keys left out (unchanged)."""
    table = _table(url)
    try:
        table.diff("id", COLUMNS, b"salt", full=full)
        conn = table._conn
        got = conn.execute(
            f"SELECT _rs_key, _rs_old_key, _rs_digest IS NULL FROM {table.diff_table}"
        ).fetchall()
        changed = {k for k, old, gone in got if not gone and old is not None}
        new = {k for k, old, gone in got if not gone and old is None}
        vanished = {old for _, old, gone in got if gone}
        unchanged = table.unchanged_count()
        assert set(table.diff_keys()) == changed | new | vanished
        table.update([pa.array(sorted(changed | new), pa.string())])
        return changed, new, vanished, unchanged
    finally:
        table.close()


def _plan(url: str) -> tuple[str, list[str]]:
    """EXPLAIN ANALYZE of the diff's lookup, in a transaction like the diff's, and the
    settings of that transaction."""
    import psycopg

    table = _table(url)
    digest = pg_digest_sql(COLUMNS, b"salt")
    try:
        conn: psycopg.Connection[Any] = table._conn
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            settings = session_settings(conn)
            for statement in settings:
                conn.execute(statement)
            sql = diff_keys_sql(
                "SELECT id, name, score FROM people", "id", digest, "recordsync", "sc",
                plain_key=True,
            )
            plan = conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}".encode()).fetchall()
            conn.execute(f"DROP TABLE {table.keys_table}")
        return "\n".join(str(r[0]) for r in plan), settings
    finally:
        table.close()


@pytest.mark.parametrize("key_type", ["int", "text"])
@pytest.mark.parametrize(
    "workers", [PARALLEL, ("max_parallel_workers = 0",)], ids=["parallel", "no-workers"]
)
def test_the_diff_finds_exactly_the_new_changed_and_vanished_keys(
    pg_url: str, workers: tuple[str, ...], key_type: str
) -> None:
    """With parallel workers taken for any table, and on a server that grants none, the diff
    finds the same keys: every row at first, then nothing, then exactly the changed, new and
    vanished ones (the counts with their checksum send the vanished keys' search)."""
    with _people(pg_url, workers, key_type) as conn:
        first = _diff(pg_url, full=True)
        assert (len(first[1]), first[3]) == (ROWS, 0)
        assert _diff(pg_url) == (set(), set(), set(), ROWS)

        plan, settings = _plan(pg_url)
        launched = re.findall(r"Workers Launched: (\d+)", plan)
        if workers == PARALLEL:  # the lookup itself in parallel workers
            assert "Parallel Hash Left Join" in plan and launched and int(launched[0]) > 0, plan
        else:  # a server without workers: nothing asked of it, the same statement in one backend
            assert not any("parallel" in s for s in settings), settings
            assert all(n == "0" for n in launched), plan

        conn.execute("UPDATE people SET name = 'renamed' WHERE id IN ('5', '600', '2999')")
        conn.execute("UPDATE people SET score = NULL WHERE id IN ('17', '1800')")
        conn.execute("DELETE FROM people WHERE id IN ('3', '1500', '2000', '3000')")
        conn.execute("INSERT INTO people VALUES ('3001', 'new', 1), ('3002', 'new', 2)")
        changed, new, vanished, unchanged = _diff(pg_url)
        assert changed == {"5", "600", "2999", "17", "1800"}
        assert new == {"3001", "3002"}
        assert vanished == {"3", "1500", "2000", "3000"}
        assert unchanged == ROWS - 5 - 4
        assert _diff(pg_url) == (set(), set(), set(), ROWS - 4 + 2)


def test_a_vanished_key_and_a_key_held_twice_are_both_found(pg_url: str) -> None:
    """One synced key gone and another held by two rows: the rows with a synced key are as
    many as the synced keys, and only the keys' checksum tells them apart; the diff then
    holds the vanished key and both rows of the other."""
    with _people(pg_url, PARALLEL, "text") as conn:
        conn.execute("ALTER TABLE people DROP CONSTRAINT people_pkey")
        _diff(pg_url, full=True)
        conn.execute("DELETE FROM people WHERE id = '10'")
        conn.execute("INSERT INTO people VALUES ('20', 'name 20', 6)")  # the same row again
        table = _table(pg_url)
        try:
            table.diff("id", COLUMNS, b"salt", full=False)
            got = table._conn.execute(
                f"SELECT _rs_key, _rs_old_key, _rs_n FROM {table.diff_table} ORDER BY 1, 2"
            ).fetchall()
            assert got == [("20", "20", 2), ("20", "20", 2), (None, "10", None)]
            assert table.unchanged_count() == ROWS - 2
        finally:
            table.close()


def test_the_update_finds_each_synced_key_of_the_diff_without_a_nested_loop(
    pg_url: str,
) -> None:
    """The update takes the diff's keys out of the synced rows by a semi-join: the work is
    the diff's rows, never the synced rows times the diff's (EXPLAIN ANALYZE: no join filter
    that throws away rows, and no OR of the diff's new and old key in the join, whose plan
    depends on the statistics: a nested loop of every synced row against every diff row, 6
    minutes for 100,000 synced rows and 10,000 changed, when they are off)."""
    with _people(pg_url, ("max_parallel_workers = 0",), "text") as conn:
        _diff(pg_url, full=True)
        conn.execute("UPDATE people SET name = 'renamed' WHERE id::int % 10 = 0")  # 300 rows
        conn.execute("ANALYZE people")
        table = _table(pg_url)
        try:
            table.diff("id", COLUMNS, b"salt", full=False)
            tconn = table._conn
            with tconn.transaction(force_rollback=True):
                for statement in UPDATE_SETTINGS:
                    tconn.execute(statement)
                plan = "\n".join(
                    str(r[0])
                    for r in tconn.execute(
                        f"EXPLAIN (ANALYZE, COSTS OFF) {table.forget_sql()}", (table.scope,)
                    ).fetchall()
                )
        finally:
            table.close()
    removed = [int(n) for n in re.findall(r"Rows Removed by Join Filter: (\d+)", plan)]
    assert not any(removed), plan
    # no OR between the diff's two keys anywhere in the join (a join filter or a BitmapOr
    # of two index scans per diff row): a semi-join on one list of keys
    assert " OR " not in plan and "BitmapOr" not in plan, plan
    assert "Nested Loop" not in plan, plan  # never a rescan per row, whatever the estimates

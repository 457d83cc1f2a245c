"""The source database's side of change detection (recordsync.read.pg_diff): the keys the
service acknowledged reach the table of synced rows through COPY's text form, whatever
they hold (checked against the session's PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recordsync.read.pg_diff import copy_text

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

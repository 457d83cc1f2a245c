"""``incremental`` on a DuckDB query (a database file), whole runs into the real sandbox:
the same watermark, look-back and full check as on PostgreSQL
(tests/nightly/test_incremental_pg.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
from tests.nightly.support import contacts, project, run, stamp_all, step_of, written_since_stamp

from e2e.support import served  # tests/ is on sys.path
from recordsync.state.ledger_rows import status_sql

MAPPING = contacts(
    "  database: crm.duckdb\n"
    "  key: id\n"
    "  query: SELECT id, first, email, score, updated_at FROM people\n"
    "  incremental: {cursor: updated_at, lookback: 15m}\n",
    mirror=False,
)


def test_a_duckdb_query_is_read_from_its_watermark(tmp_path: Path) -> None:
    pipeline = project(tmp_path / "p", MAPPING)
    db = tmp_path / "p" / "crm.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE people AS SELECT i AS id, 'Ann' || i AS first,"
            " 'ann' || i || '@example.org' AS email, (i * 2)::VARCHAR AS score,"
            " TIMESTAMP '2026-03-01 00:00:00' + i * INTERVAL 1 HOUR AS updated_at"
            " FROM range(1, 31) AS t(i)"
        )
    work = tmp_path / "work"
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url)
        assert (first.exit_code, step_of(first)["created"]) == (0, 30)
        second = run(pipeline, work, url)
        assert (step_of(second)["rows_read"], step_of(second)["rows_sent"]) == (1, 0)
        with sqlite3.connect(work / "state.db") as conn:  # as if its last send had failed
            failed = status_sql("failed")
            conn.execute(f"UPDATE ledger SET last_status = {failed} WHERE source_key = '3'")
        stamp_all(work / "sandbox.db")
        with duckdb.connect(str(db)) as con:  # committed late, inside the look-back
            con.execute(
                "UPDATE people SET score = '55', updated_at = TIMESTAMP '2026-03-02 05:50:00'"
                " WHERE id = 4"
            )
        third = run(pipeline, work, url)
        step = step_of(third)
        # the window's two rows, and row 3 by its key (failed last time: sent again)
        assert (third.exit_code, step["rows_read"], step["updated"]) == (0, 3, 2)
        assert written_since_stamp(url) == {"ann4@example.org", "ann3@example.org"}

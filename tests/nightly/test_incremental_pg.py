"""A query source read from its cursor (``source: {incremental: ...}``), whole runs into the
real sandbox over HTTP against the session's real PostgreSQL: what is read (rows counted at
the reader), what reaches the service (records compared in the sandbox), late commits within
the look-back, and mirror deletes only on the full check."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest
from tests.nightly.support import (
    PASSES,
    Fetched,
    contacts,
    killed,
    project,
    run,
    stamp_all,
    step_of,
    written_since_stamp,
)
from tests.pg_support import new_database

from e2e.support import all_records, served  # tests/ is on sys.path
from recordsync.state.location import state_location

MAPPING = contacts(
    "  engine: postgres\n"
    "  dsn_env: PUSH_PG_DSN\n"
    "  key: id\n"
    "  query: SELECT id, first, email, score, updated_at FROM people\n"
    "  incremental: {cursor: updated_at, lookback: 15m, full_check_every: 7d}\n"
)
BASE = "2026-03-01 00:00:00+00"


@pytest.fixture
def db(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE people (id int, first text, email text, score text,"
            " updated_at timestamptz)"
        )
        conn.execute(  # row i last changed i hours after BASE
            "INSERT INTO people SELECT i, 'Ann' || i, 'ann' || i || '@example.org',"
            " (i * 2)::text, %s::timestamptz + i * interval '1 hour'"
            " FROM generate_series(1, 40) AS i",
            (BASE,),
        )
    monkeypatch.setenv("PUSH_PG_DSN", pg_url)
    return pg_url


def age_full_check(state_db: Path, days: int) -> None:
    """The last full check dated ``days`` earlier (as if that time had passed)."""
    with sqlite3.connect(state_db) as conn:
        (mark,) = conn.execute(
            "SELECT mark FROM target_marks WHERE object_type LIKE 'cursor%'"
        ).fetchone()
        got = json.loads(mark)
        got["full_at"] -= days * 86_400
        conn.execute(
            "UPDATE target_marks SET mark = ? WHERE object_type LIKE 'cursor%'",
            (json.dumps(got),),
        )


def test_only_rows_past_the_watermark_are_read_late_commits_included(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url)  # no watermark: a full check
        assert (first.exit_code, step_of(first)["created"]) == (0, 40)

        fetched.rows = 0
        second = run(pipeline, work, url)  # from 40h less 15m: row 40 only
        step = step_of(second)
        assert (second.exit_code, step["rows_read"], step["rows_sent"]) == (0, 1, 0)
        assert fetched.rows == PASSES * 1

        stamp_all(work / "sandbox.db")
        with psycopg.connect(db, autocommit=True) as conn:
            # committed late: its cursor 10 minutes before the watermark (inside the
            # look-back); another one 39 hours before it (outside)
            conn.execute(
                "UPDATE people SET score = '91', updated_at = %s::timestamptz"
                " + interval '40 hours' - interval '10 minutes' WHERE id = 12",
                (BASE,),
            )
            conn.execute("UPDATE people SET score = '92' WHERE id = 2")
            conn.execute("DELETE FROM people WHERE id = 5")
        third = run(pipeline, work, url)
        step = step_of(third)
        assert (third.exit_code, step["rows_read"], step["updated"]) == (0, 2, 1)
        assert third.summary["accounting_ok"]
        assert written_since_stamp(url) == {"ann12@example.org"}
        assert step["deleted"] == 0  # an incremental pass never deletes: it says when
        (note,) = [w for w in third.summary["warnings"] if "incremental pass" in w]
        assert "mirror deletes" in note and "next full check" in note
        assert len(all_records(url, "contacts")) == 40

        stamp_all(work / "sandbox.db")
        age_full_check(work / "state.db", 8)  # full_check_every (7d) has passed
        full = run(pipeline, work, url)
        step = step_of(full)
        assert (full.exit_code, step["rows_read"], step["updated"]) == (0, 39, 1)
        assert step["deleted"] == 1  # the full check deletes what left the source
        assert written_since_stamp(url) == {"ann2@example.org"}
        assert not [w for w in full.summary["warnings"] if "incremental pass" in w]

        fetched.rows = 0
        after = run(pipeline, work, url)  # the next night is incremental again
        assert (step_of(after)["rows_read"], step_of(after)["rows_sent"]) == (2, 0)

        # a changed mapping changes every row's input: the next run reads every row
        (tmp_path / "p" / "m.yaml").write_text(
            MAPPING.replace("  lead_score: score\n", "  lead_score: score\n  job_title: first\n")
        )
        remapped = run(pipeline, work, url)
        step = step_of(remapped)
        assert (remapped.exit_code, step["rows_read"], step["updated"]) == (0, 39, 39)


def test_an_incremental_pass_killed_mid_step_is_resumed_without_sending_twice(
    tmp_path: Path, db: str
) -> None:
    """Killed with SIGKILL after its first acknowledged chunk (one row a chunk): the next run
    resumes (reading the whole query: the journal decides), the run after it reads from the
    watermark the killed run never moved, and nothing is sent twice."""
    pipeline = project(tmp_path / "p", MAPPING)
    (tmp_path / "p" / "p.yaml").write_text(
        "name: pd\nsend: {chunk_size: 1, canary_chunk_size: 1}\n"
        "steps:\n  - mapping: m.yaml\n    name: people\n"
    )
    work = tmp_path / "work"
    changed = {f"ann{i}@example.org" for i in (36, 37, 38)}
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "UPDATE people SET score = '66', updated_at = now() WHERE id IN (36, 37, 38)"
            )
        stamp_all(work / "sandbox.db")
        killed("ack", pipeline, work, url)
        sent_before_kill = written_since_stamp(url)
        assert "ann36@example.org" in sent_before_kill <= changed  # the first, acknowledged
        stamp_all(work / "sandbox.db")
        resumed = run(pipeline, work, url)
        assert (resumed.exit_code, resumed.summary["attempts"]) == (0, 2)
        assert step_of(resumed)["rows_read"] == 40  # a resumed run reads every row
        again = written_since_stamp(url)
        assert changed - sent_before_kill <= again <= changed - {"ann36@example.org"}
        stamp_all(work / "sandbox.db")
        after = run(pipeline, work, url)  # the watermark of the last complete run
        assert (after.exit_code, step_of(after)["rows_sent"], written_since_stamp(url)) == (
            0,
            0,
            set(),
        )
        assert len(all_records(url, "contacts")) == 40


def test_with_the_state_on_postgresql(tmp_path: Path, db: str, pg_server: str) -> None:
    """The watermark and the synced rows' snapshot kept in a PostgreSQL state database:
    an incremental source reads its window, a source compared in the database reads
    nothing, as with SQLite."""
    state = state_location(new_database(pg_server))
    pipeline = project(tmp_path / "p", MAPPING)
    pushed = MAPPING.replace(
        "  incremental: {cursor: updated_at, lookback: 15m, full_check_every: 7d}\n",
        "  change_detection: database\n",
    )
    (tmp_path / "p" / "d.yaml").write_text(pushed, encoding="utf-8")
    (tmp_path / "p" / "p.yaml").write_text(
        "name: pd\nsteps:\n  - mapping: m.yaml\n    name: people\n"
        "  - mapping: d.yaml\n    name: again\n"
    )
    work = tmp_path / "work"
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url, state_db=state)
        assert first.exit_code == 0, first.summary
        second = run(pipeline, work, url, state_db=state)
        inc, pushed_step = second.summary["steps"]
        assert (inc["rows_read"], inc["rows_sent"]) == (1, 0)
        assert (pushed_step["rows_unchanged"], pushed_step["rows_sent"]) == (40, 0)

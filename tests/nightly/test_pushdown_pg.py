"""Change detection inside PostgreSQL (``source: {change_detection: database}``), whole
runs into the real sandbox over HTTP against the session's real PostgreSQL: what leaves the
database (rows fetched, counted at the reader), what reaches the service (records compared
in the sandbox), mirror deletes under their guards, and the fallback without privileges."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from tests.nightly.support import (
    PASSES,
    Fetched,
    contacts,
    full_then_diff,
    killed,
    project,
    refused_then_allowed,
    run,
    stamp_all,
    stamps,
    step_of,
    written_since_stamp,
)

from e2e.support import all_records, served  # tests/ is on sys.path
from recordsync.nightly import acked_keys

MAPPING = contacts(
    "  engine: postgres\n"
    "  dsn_env: PUSH_PG_DSN\n"
    "  key: id\n"
    "  batch_size: 7\n"
    "  query: SELECT id, first, email, score FROM people\n"
    "  change_detection: database\n"
)

ROWS = [(i, f"Ann{i}", f"ann{i}@example.org", str(i * 2)) for i in range(1, 41)]


@pytest.fixture
def db(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE people (id int, first text, email text, score text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO people VALUES (%s, %s, %s, %s)", ROWS[::-1])
    monkeypatch.setenv("PUSH_PG_DSN", pg_url)
    return pg_url


def test_only_the_diff_leaves_the_database(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acked_keys, "_FLUSH", 3)  # the keys acknowledged go through a file
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url)
        assert first.exit_code == 0, first.summary
        assert step_of(first)["created"] == 40
        # every row, in each pass over the source (duplicate keys, merges, the rows)
        assert fetched.rows == PASSES * 40
        with psycopg.connect(db) as conn:
            synced = conn.execute("SELECT count(*) FROM recordsync.synced").fetchone()
        assert synced == (40,)
        before = stamps(url)

        fetched.rows = 0
        second = run(pipeline, work, url)
        assert second.exit_code == 0
        assert (step_of(second)["rows_unchanged"], step_of(second)["rows_sent"]) == (40, 0)
        assert step_of(second)["rows_read"] == 40
        assert second.summary["accounting_ok"]
        assert fetched.rows == 0  # nothing left the database
        assert stamps(url) == before  # nothing reached the service

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("UPDATE people SET score = '99' WHERE id = 12")
        fetched.rows = 0
        third = run(pipeline, work, url, list_unchanged=True)
        step = step_of(third)
        assert (step["updated"], step["rows_unchanged"], step["created"]) == (1, 39, 0)
        assert third.summary["accounting_ok"]
        results = (third.report_dir / "results.csv").read_text(encoding="utf-8").splitlines()
        assert len(results) == 41  # every row of the source (listed: unchanged ones too)
        assert fetched.rows == PASSES * 1
        after = stamps(url)
        written = [rid for rid, at in after.items() if before[rid] != at]
        assert len(written) == 1
        (record,) = [r for r in all_records(url, "contacts") if r["id"] == written[0]]
        assert record["email"] == "ann12@example.org"
        assert record["lead_score"] == 99

        fetched.rows = 0  # and back to nothing to do
        fourth = run(pipeline, work, url)
        assert (step_of(fourth)["rows_sent"], fetched.rows) == (0, 0)

        fetched.rows = 0  # --full-refresh reads and sends every row, then a diff again
        refresh = run(pipeline, work, url, full_refresh=True)
        assert (step_of(refresh)["rows_sent"], fetched.rows) == (40, PASSES * 40)
        fetched.rows = 0
        fifth = run(pipeline, work, url)
        assert (step_of(fifth)["rows_unchanged"], fetched.rows) == (40, 0)


def test_vanished_keys_are_mirror_deleted_within_the_guards(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0  # a diff pass from here on
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DELETE FROM people WHERE id IN (5, 6)")
        fetched.rows = 0
        gone = run(pipeline, work, url)
        assert gone.exit_code == 0, gone.summary
        step = step_of(gone)
        assert (step["deleted"], step["rows_unchanged"], step["rows_sent"]) == (2, 38, 0)
        assert fetched.rows == 0  # vanished keys are found in the database
        emails = {r["email"] for r in all_records(url, "contacts")}
        assert len(emails) == 38 and "ann5@example.org" not in emails

        # more than half the rows vanishing trips the volume guard (before max_share is
        # reached): nothing deleted, exit 1
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DELETE FROM people WHERE id > 10")
        refused = run(pipeline, work, url)
        assert refused.exit_code == 1
        assert [g["kind"] for g in refused.summary["guards"]] == ["drop"]
        assert len(all_records(url, "contacts")) == 38

        # an emptied table never deletes, even with the limits lifted
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DELETE FROM people")
        empty = run(pipeline, work, url, allow_mass_deletes=True)
        assert empty.exit_code == 3
        assert "the source has no rows" in str(empty.summary)
        assert len(all_records(url, "contacts")) == 38


def test_vanished_keys_above_max_count_are_refused(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three keys vanish from the database's diff with ``max_count: 2``: refused (exit 3),
    nothing deleted, found without reading a row; ``--allow-mass-deletes`` deletes them."""
    limited = MAPPING.replace("max_share: 0.5}", "max_share: 0.5, max_count: 2}")
    pipeline = project(tmp_path / "p", limited)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0  # a diff pass from here on
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DELETE FROM people WHERE id IN (5, 6, 7)")
        refused_then_allowed(pipeline, work, url, fetched, total=40, gone=3)
        emails = {r["email"] for r in all_records(url, "contacts")}
        assert len(emails) == 37 and "ann6@example.org" not in emails
        fetched.rows = 0
        after = run(pipeline, work, url)
        assert (after.exit_code, step_of(after)["rows_unchanged"], step_of(after)["deleted"]) == (
            0,
            37,
            0,
        )
        assert fetched.rows == 0


def test_a_synced_key_returned_twice_is_read_with_both_rows(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row copied under a key the database's table holds: neither copy differs from the
    synced digest, yet both are read (the diff's counts show a key held twice) and reported
    as duplicates; the other rows stay in the database."""
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("INSERT INTO people VALUES (5, 'Ann5', 'ann5@example.org', '10')")
        stamp_all(work / "sandbox.db")
        fetched.rows = 0
        twice = run(pipeline, work, url)
        step = step_of(twice)
        assert twice.exit_code == 1 and twice.summary["accounting_ok"]
        # the first copy wins and is found unchanged by the ledger; the second is a duplicate
        assert (step["rows_read"], step["rows_unchanged"], step["rows_duplicate"]) == (41, 40, 1)
        assert fetched.rows == PASSES * 2
        assert written_since_stamp(url) == set()


SETUPS = {
    # no schema yet, no CREATE on the database
    "database": ([], "may not create schema 'recordsync' (CREATE privilege on the database)"),
    # the schema made by an administrator, the user may use it but not create tables in it
    "schema": (
        ["CREATE SCHEMA recordsync", "GRANT USAGE ON SCHEMA recordsync TO {role}"],
        "may not create tables in schema 'recordsync' (CREATE privilege on the schema)",
    ),
    # the schema and its table made by an administrator, the table only readable
    "table": (
        [
            "CREATE SCHEMA recordsync",
            "GRANT USAGE, CREATE ON SCHEMA recordsync TO {role}",
            "CREATE TABLE recordsync.synced (scope text NOT NULL, key text NOT NULL,"
            " digest bigint NOT NULL, PRIMARY KEY (scope, key))",
            "GRANT SELECT ON recordsync.synced TO {role}",
        ],
        "may not write table recordsync.synced (SELECT, INSERT and DELETE privileges)",
    ),
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_without_write_access_it_says_so_and_reads_the_whole_query(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    statements, said = SETUPS[setup]
    role = f"pd_reader_{setup}"  # roles outlive a test's database
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON people TO {role}")
        for statement in statements:
            conn.execute(statement.format(role=role))
    monkeypatch.setenv("PUSH_PG_DSN", db.replace("postgres@", f"{role}@"))
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url)
        assert first.exit_code == 0, first.error
        warnings = [w for w in first.summary["warnings"] if "change_detection" in w]
        assert len(warnings) == 1, first.summary["warnings"]
        (warning,) = warnings
        assert "query:postgres" in warning and said in warning
        assert f"{role}@" not in warning  # no connection string
        fetched.rows = 0
        second = run(pipeline, work, url)  # today's path: every row read, none sent
        assert (step_of(second)["rows_unchanged"], step_of(second)["rows_sent"]) == (40, 0)
        assert fetched.rows >= 40
    with psycopg.connect(db) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'recordsync'"
        ).fetchall()
        assert tables == ([] if setup == "database" else [("synced",)] if setup == "table" else [])
        if setup == "table":
            assert conn.execute("SELECT count(*) FROM recordsync.synced").fetchone() == (0,)


@pytest.mark.parametrize("point", ["update", "commit", "ack", "diff"])
def test_killed_mid_step_the_resumed_run_sends_nothing_twice(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Killed after the step's ledger is written but before the database's table is updated
    (``update``), after that update but before the step's snapshot is registered
    (``commit``), after the first acknowledged chunk (``ack``, one row a chunk), or inside
    the diff's transaction before anything is sent (``diff``): the next run resumes, sends
    only what was never acknowledged, and the run after it is a full pass that sends nothing
    and leaves the table as it should be."""
    pipeline = project(tmp_path / "p", MAPPING)
    (tmp_path / "p" / "p.yaml").write_text(
        "name: pd\nsend: {chunk_size: 1, canary_chunk_size: 1}\n"
        "steps:\n  - mapping: m.yaml\n    name: people\n"
    )
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    changed = {f"ann{i}@example.org" for i in (3, 17, 30)}
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("UPDATE people SET score = '77' WHERE id IN (3, 17, 30)")
        stamp_all(work / "sandbox.db")
        killed(point, pipeline, work, url)
        sent_before_kill = written_since_stamp(url)
        # acknowledged before the kill: every changed row (update, commit), the first one
        # (ack), none (diff)
        acked = {"update": changed, "commit": changed, "ack": {"ann3@example.org"}, "diff": set()}[
            point
        ]
        assert acked <= sent_before_kill <= changed
        if point == "diff":  # nothing sent; the transaction's tables went with it
            assert sent_before_kill == set()
            with psycopg.connect(db) as conn:
                left = conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'recordsync'"
                ).fetchall()
            assert left == [("synced",)]
        stamp_all(work / "sandbox.db")

        resumed = run(pipeline, work, url)
        assert resumed.exit_code == 0, resumed.summary
        assert resumed.summary["attempts"] == 2
        # what the killed attempt had acknowledged is never sent again; the rest once (a
        # request in flight at the kill is settled: a contact with an e-mail is sent again
        # as it was, onto the same record)
        again = written_since_stamp(url)
        assert changed - sent_before_kill <= again <= changed - acked
        scores = {r["lead_score"] for r in all_records(url, "contacts") if r["email"] in changed}
        assert scores == {77}
        assert len(all_records(url, "contacts")) == 40

        stamp_all(work / "sandbox.db")
        full_then_diff(pipeline, work, url, fetched, total=40)


def test_a_key_the_database_spells_otherwise_is_read_alone(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text key ending in a no-break space: recordsync's key trims it, the database's text
    keeps it, so the table never holds that key. Its row is read from the diff every run
    (and found unchanged by the ledger); every other row stays in the database."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE people (id text, first text, email text, score text)")
        rows = [(f"k{i}", f"Ann{i}", f"ann{i}@example.org", str(i)) for i in range(1, 21)]
        rows[6] = ("k7\u00a0", "Ann7", "ann7@example.org", "7")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO people VALUES (%s, %s, %s, %s)", rows)
    monkeypatch.setenv("PUSH_PG_DSN", pg_url)
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        for _ in range(2):
            fetched.rows = 0
            again = run(pipeline, work, url)
            step = step_of(again)
            assert (again.exit_code, step["rows_unchanged"], step["rows_sent"]) == (0, 20, 0)
            assert again.summary["accounting_ok"]
            assert fetched.rows == PASSES * 1


def test_a_new_row_matching_an_unchanged_rows_record_is_held(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new row with an unchanged row's e-mail (the contacts' match key): the service would
    write it onto that row's record, which no row read this run shows; it is held
    ``merged`` and the record is left alone (compared in the sandbox)."""
    pipeline = project(tmp_path / "p", MAPPING)
    work = tmp_path / "work"
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("INSERT INTO people VALUES (41, 'Impostor', 'ann3@example.org', '1')")
        stamp_all(work / "sandbox.db")
        held = run(pipeline, work, url)
        step = step_of(held)
        assert (held.exit_code, step["rows_merged"], step["rows_unchanged"]) == (1, 1, 40)
        assert held.summary["accounting_ok"]
        assert written_since_stamp(url) == set()
        (ann3,) = [r for r in all_records(url, "contacts") if r["email"] == "ann3@example.org"]
        assert ann3["name"] == "Ann3"
        failures = (held.report_dir / "failures.csv").read_text(encoding="utf-8")
        assert "merges with the row of key '3', unchanged in the database" in failures

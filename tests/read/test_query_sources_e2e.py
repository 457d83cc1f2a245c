"""Query sources and object storage through whole runs into the real sandbox over HTTP: the
same mapping, validation, change detection and report as files (tests/read/servers.py starts
PostgreSQL and the S3 server)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pyarrow.fs as pafs
import pytest

from e2e.support import served, target  # tests/ is on sys.path (no __init__.py)
from recordsync.core.errors import RecordsyncError
from recordsync.prepare import digest_scan, digests
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.tuning import sizes

ROWS = [(i, f"Ann{i}", f"ann{i}@example.org", str(i * 3)) for i in range(1, 31)]
ROWS[6] = (7, "Bad", "not-an-email", "21")  # invalid: reported with its key (id 7)

MAPPING = """object_type: contacts
source:
{source}
name: {{column: first}}
match_by: email
fields:
  email: email
  lead_score: score
"""


def _project(root: Path, source: str) -> Path:
    (root / "m.yaml").write_text(MAPPING.format(source=source), encoding="utf-8")
    (root / "p.yaml").write_text("name: q\nsteps:\n  - mapping: m.yaml\n    name: people\n")
    return root / "p.yaml"


def _run(pipeline: Path, work: Path, url: str) -> Any:
    request = RunRequest(
        pipeline,
        report_dir=work / "reports",
        state_db=work / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
    )
    return run_pipeline(request, target=target(url))


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _three_runs(
    pipeline: Path, work: Path, change: Any, label: str, first_line: int = 1
) -> None:
    """First run creates, the second finds every row unchanged, the third sends the one row
    ``change()`` edited."""
    with served(work / "sandbox.db") as url:
        first = _run(pipeline, work, url)
        step = first.summary["steps"][0]
        assert first.exit_code == 1  # the invalid row
        assert (step["rows_read"], step["created"], step["rows_invalid"]) == (30, 29, 1)
        results = _csv(first.report_dir / "results.csv")
        assert {r["source_file"] for r in results} == {label}
        lines = list(range(first_line, first_line + 30))  # a query's rows: 1.. in key order
        assert [int(r["source_row"]) for r in results] == lines
        (bad,) = _csv(first.report_dir / "failures.csv")
        assert (bad["id"], bad["email"]) == ("7", "not-an-email")
        assert bad["_source_row"] == str(first_line + 6)
        assert bad["_source_file"] == label and "not a valid email" in bad["_error"]
        second = _run(pipeline, work, url)
        assert second.summary["steps"][0]["rows_unchanged"] == 29
        assert second.summary["steps"][0]["rows_sent"] == 0
        change()
        third = _run(pipeline, work, url)
        step = third.summary["steps"][0]
        assert (step["rows_unchanged"], step["updated"], step["created"]) == (28, 1, 0)
        (sent,) = [r for r in _csv(third.report_dir / "results.csv") if r["status"] == "updated"]
        assert sent["match_value"] == "ann12@example.org"


def test_a_duckdb_query_syncs_like_a_file(tmp_path: Path) -> None:
    db = tmp_path / "crm.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people (id INT, first TEXT, email TEXT, score TEXT)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", list(reversed(ROWS)))
    con.close()
    source = "  query: SELECT * FROM people\n  database: crm.duckdb\n  key: id\n  name: people"

    def change() -> None:
        with duckdb.connect(str(db)) as c:
            c.execute("UPDATE people SET score = '99' WHERE id = 12")

    _three_runs(_project(tmp_path, source), tmp_path / "work", change, "query:people")


def test_a_postgres_query_syncs_like_a_file(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE e2e_people (id int, first text, email text, score text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO e2e_people VALUES (%s, %s, %s, %s)", ROWS[::-1])
    # the server trusts local connections: the password is ignored, but must never show
    monkeypatch.setenv("E2E_PG_DSN", pg_url.replace("postgres@", "postgres:Pw-n0t-in-reports@"))
    source = (
        "  engine: postgres\n  dsn_env: E2E_PG_DSN\n  key: id\n  batch_size: 7\n"
        "  query: SELECT id, first, email, score FROM e2e_people"
    )

    def change() -> None:
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute("UPDATE e2e_people SET score = '99' WHERE id = 12")

    _three_runs(_project(tmp_path, source), tmp_path / "work", change, "query:postgres")
    for f in (tmp_path / "work" / "reports").rglob("*"):
        assert not f.is_file() or "Pw-n0t-in-reports" not in f.read_text(encoding="utf-8")


def test_a_postgres_query_failing_on_a_row_stops_the_run_naming_the_source_and_column(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE e2e_people (id int, first text, email text, born date)")
        conn.execute(
            "INSERT INTO e2e_people SELECT g, 'Ann' || g, 'ann' || g || '@example.org',"
            " CASE WHEN g = 25 THEN 'infinity'::date ELSE '2000-01-01'::date END"
            " FROM generate_series(1, 30) g"
        )
    monkeypatch.setenv("E2E_PG_DSN", pg_url.replace("postgres@", "postgres:Pw-n0t-in-errors@"))
    source = (
        "  engine: postgres\n  dsn_env: E2E_PG_DSN\n  key: id\n  batch_size: 7\n"
        "  query: SELECT id, first, email, born, '3' AS score FROM e2e_people"
    )
    pipeline = _project(tmp_path, source)
    with served(tmp_path / "sandbox.db") as url:
        try:
            result = _run(pipeline, tmp_path / "work", url)
        except RecordsyncError as exc:
            message = str(exc)
        else:
            message = str(result.summary)
            assert result.exit_code != 0, message
    assert 'column "born" holds a date outside years 1 to 9999: infinity' in message
    assert "query:postgres" in message and "Pw-n0t-in-errors" not in message


def test_a_csv_on_s3_syncs_like_a_local_file(
    tmp_path: Path, bucket: tuple[pafs.S3FileSystem, str]
) -> None:
    fs, name = bucket

    def upload(rows: list[tuple[int, str, str, str]]) -> None:
        lines = ["id,first,email,score", *(",".join(map(str, r)) for r in rows)]
        with fs.open_output_stream(f"{name}/daily/people.csv", compression=None) as f:
            f.write(("\n".join(lines) + "\n").encode())

    upload(ROWS)
    uri = f"s3://{name}/daily/people.csv"
    pipeline = _project(tmp_path, f"  path: {uri}")

    def change() -> None:
        upload([(i, f, e, "99" if i == 12 else s) for i, f, e, s in ROWS])

    # a file's rows are numbered by line: row 1 is the header, so line = id + 1
    _three_runs(pipeline, tmp_path / "work", change, uri, first_line=2)


def test_a_postgres_table_written_during_a_nightly_run_is_read_as_the_run_began(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live table: a nightly run's second pass prepares the rows its first pass read (kept
    on disk past the budget), and the row it must prepare in full although found unchanged
    (the winner of a duplicate e-mail) is fetched by its cells, while rows are written
    in front of it: the run neither stops nor sends what it did not read; the next run
    sends the rows written meanwhile."""
    rows = [*ROWS, (31, "Dup", "ann5@example.org", "5")]  # e-mail of id 5: id 31 wins
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE e2e_live (id int, first text, email text, score text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO e2e_live VALUES (%s, %s, %s, %s)", rows[::-1])
    monkeypatch.setenv("E2E_PG_DSN", pg_url)
    monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 3)  # the rest go to the file on disk
    source = (
        "  engine: postgres\n  dsn_env: E2E_PG_DSN\n  key: id\n  batch_size: 7\n"
        "  query: SELECT id, first, email, score FROM e2e_live"
    )
    pipeline, work = _project(tmp_path, source), tmp_path / "work"
    scanned, second = digest_scan.iter_source, digests.iter_source
    reads: list[str] = []

    def read(kind: str) -> None:
        reads.append(kind)
        if len(reads) == 2:  # whatever reads the table next: rows written in front meanwhile
            with psycopg.connect(pg_url, autocommit=True) as c:
                c.execute("INSERT INTO e2e_live VALUES (0, 'Zoe', 'zoe@example.org', '1')")
                c.execute("UPDATE e2e_live SET score = '99' WHERE id = 12")

    def scan(*args: Any, **kwargs: Any) -> Any:
        read("scan")
        return scanned(*args, **kwargs)

    def read_again(*args: Any, **kwargs: Any) -> Any:
        read("again")
        return second(*args, **kwargs)

    with served(work / "sandbox.db") as url:
        first = _run(pipeline, work, url)
        step = first.summary["steps"][0]
        assert (step["rows_read"], step["created"]) == (31, 29)
        assert (step["rows_invalid"], step["rows_duplicate"]) == (1, 1)
        monkeypatch.setattr(digest_scan, "iter_source", scan)
        monkeypatch.setattr(digests, "iter_source", read_again)
        during = _run(pipeline, work, url)
        step = during.summary["steps"][0]
        assert during.exit_code == 1 and during.error is None  # the invalid and duplicate rows
        assert (step["rows_read"], step["rows_sent"]) == (31, 0)
        assert reads == ["scan", "scan"]  # the first pass, the demoted row; never again
        after = _run(pipeline, work, url)
        step = after.summary["steps"][0]
        assert (step["rows_read"], step["created"], step["updated"]) == (32, 1, 1)

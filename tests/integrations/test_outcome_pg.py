"""The orchestrator wrappers' run with ``state_db`` a PostgreSQL URL (a plain string, as a
Dagster asset or an Airflow task passes it): the state goes to the database, none to the
worker's disk, and the URL's password shows nowhere in the outcome."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from tests.integrations.support import clean_mapping
from tests.pg_support import PASSWORD, new_database

from recordsync.integrations.outcome import run_sync


def test_a_state_url_keeps_the_state_in_postgres(project: Path, pg_server: str) -> None:
    url = new_database(pg_server).replace("postgres@", f"postgres:{PASSWORD}@")
    mapping = clean_mapping(project)
    first, second = run_sync(mapping, state_db=url), run_sync(mapping, state_db=url)
    assert first.metadata()["totals"]["created"] == 3
    assert second.metadata()["totals"]["rows_unchanged"] == 3 and second.failure() is None
    assert not (project / ".recordsync" / "state.db").exists()
    assert not list(project.glob("postgres*"))  # not a file named like the URL either
    with psycopg.connect(url, autocommit=True) as conn:
        ledger = conn.execute("SELECT count(*) FROM ledger").fetchone()
    assert ledger == (3,)
    for outcome in (first, second):
        assert PASSWORD not in json.dumps(outcome.metadata(), default=str) + repr(outcome)

"""One writer per key space with the state on PostgreSQL: the key-space locks are advisory
locks of the state database, so a run on another machine (here: another lock directory, no
shared lock files) sharing that database is refused naming the first run, or waits for it.
Runs are real, against the sandbox over HTTP; the first run's locks are held by the test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.e2e.support import all_records, served, target
from tests.pg_support import PASSWORD, new_database

from recordsync.core.errors import RunAborted
from recordsync.run.pipeline import run_pipeline
from recordsync.state import StateStore
from recordsync.state.keyspace import LOCK_DIR_ENV, hold_key_spaces
from recordsync.state.location import PgUrl

from .test_keyspace import (
    ROWS,
    assert_names_first,
    held_by_first,
    request,
    run_while_held,
    spaces_of,
    write_project,
)


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """A fresh database, its URL with a password that must never show."""
    return new_database(pg_server).replace("postgres@", f"postgres:{PASSWORD}@")


def test_second_pipeline_sharing_a_mapping_is_refused_naming_the_first(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_project(tmp_path / "project")
    state = PgUrl(pg_url)
    with served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, state):
            monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "another-machine"))
            with pytest.raises(RunAborted) as info:
                run_pipeline(request(root, "second", state), target=target(url))
            people = run_pipeline(request(root, "people", state), target=target(url))
            assert people.exit_code == 0  # another key space: side by side
        message = f"{info.value} {info.value.hint}"
        assert_names_first(message)
        assert "PostgreSQL state database" in message and PASSWORD not in message
        assert all_records(url, "deals") == []  # nothing sent
        result = run_pipeline(request(root, "second", state), target=target(url))
        assert result.exit_code == 0  # released at the first run's end
        assert len(all_records(url, "deals")) == ROWS


def test_a_second_lock_on_the_same_session_is_refused(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_project(tmp_path / "project")
    spaces = spaces_of(root / "first.yaml", "http://h")
    with StateStore(pg_url) as store:
        with hold_key_spaces(spaces, pipeline="first", store=store):
            monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "elsewhere"))  # only the session
            second = hold_key_spaces(spaces, pipeline="second", store=store)
            with pytest.raises(RunAborted, match="PostgreSQL state database") as info:
                second.__enter__()  # session locks stack: refused as another session is
            assert_names_first(f"{info.value} {info.value.hint}")
        with hold_key_spaces(spaces, pipeline="second", store=store):  # released: taken
            pass


def test_wait_for_lock_waits_until_the_first_releases(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_project(tmp_path / "project")
    state = PgUrl(pg_url)
    with served(tmp_path / "sandbox.db") as url:
        spaces = spaces_of(root / "first.yaml", url)

        @contextmanager
        def held_in_the_database_only() -> Iterator[None]:
            with StateStore(state) as store, hold_key_spaces(spaces, pipeline="first", store=store):
                monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "another-machine"))
                yield

        result, error, waited = run_while_held(
            held_in_the_database_only(),
            lambda: run_pipeline(
                request(root, "second", state, wait_for_lock=600), target=target(url)
            ),
        )
        assert waited and error is None, error
        assert result is not None and result.exit_code == 0
        assert len(all_records(url, "deals")) == ROWS

"""run/pipeline.py's wiring: flags of ``recordsync run`` reach the parts they configure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import KEY, all_records, loopback_client, served
from tests.send.support import people_project

from recordsync.core.errors import AuthError
from recordsync.run.pipeline import read_service
from recordsync.state import StateStore
from recordsync.state.lock import PipelineLock


@pytest.mark.parametrize(("flags", "synchronous"), [(["--durable-state"], 2), ([], 1)])
def test_durable_state_reaches_the_state_store(
    project: Path,
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    synchronous: int,
) -> None:
    """--durable-state opens the run's state database with ``synchronous=FULL`` (2: every
    commit fsynced); without it ``NORMAL`` (1). It is opened once: the binding of the
    target, the check of a ledger-only step and the run's hook share it."""
    people_project(project, 3, name="wired")
    seen: list[int] = []

    class Observed(StateStore):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self.connection.execute("PRAGMA synchronous").fetchone()[0])

    for where in ("run.pipeline", "nightly.hook", "run.state_access", "run.guards"):
        monkeypatch.setattr(f"recordsync.{where}.StateStore", Observed)
    assert cli("run", "run.yaml", "--quiet", *flags) == 0
    assert seen == [synchronous]


def test_a_run_stopped_part_way_ends_its_source_and_its_gc_pause(
    project: Path, cli: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that stops while its source is read part-way (a state write fails as the third
    chunk is journaled: exit 3) closes the source's stream at once, so its pause of the
    garbage collector (tuning/gcpause.py: objects frozen while a batch is prepared) ends with the
    run: a process that runs recordsync as a library (an orchestrator's worker) collects its
    objects as before."""
    import gc

    from tests.e2e.support import journal_full_at_the_third_chunk

    from recordsync.state import Journal

    people_project(project, 30, name="stopped", send={"chunk_size": 10})
    full = journal_full_at_the_third_chunk()
    monkeypatch.setattr(Journal, "begin_chunk", full)
    gc.unfreeze()
    assert cli("run", "run.yaml", "--quiet", "--state-db", "st/state.db") == 3
    assert full.calls == 3  # type: ignore[attr-defined]
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_read_service_asks_the_schema_and_the_users_beside_the_local_work(
    tmp_path: Path,
) -> None:
    """read_service: the schema and the users as asked one after the other, and what the
    local work beside them returned."""
    with served(tmp_path / "sandbox.db") as url, loopback_client(url) as client:
        alone = client.schema(), client.users()
        schema, users, opened = read_service(client, lambda: "opened")
    assert (schema, users) == alone and opened == "opened"
    assert users and any(t.get("slug") == "contacts" for t in schema)


def test_read_service_raises_the_services_error_first(tmp_path: Path) -> None:
    """A GET that fails (a wrong key) is raised, not the local work's error; with both GETs
    answered, the local work's own error is raised once both are in."""

    def cannot_open() -> None:
        raise OSError(28, "No space left on device")

    with served(tmp_path / "sandbox.db") as url:
        with loopback_client(url, "sk_live_not_the_key") as client, pytest.raises(AuthError):
            read_service(client, cannot_open)
        with loopback_client(url) as client:
            with pytest.raises(OSError, match="No space left"):
                read_service(client, cannot_open)
            assert client.requests_sent == 2  # both GETs were made before it was raised


def _served_project(root: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    people_project(root, 5, name="meta")
    monkeypatch.chdir(root)
    for var in ("RECORDSYNC_BASE_URL", "RECORDSYNC_PROFILE", "RECORDSYNC_STATE_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RECORDSYNC_API_KEY", key)


def test_a_state_store_that_cannot_be_opened_stops_the_run_before_anything_is_sent(
    tmp_path: Path, cli: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state store is opened while the service's schema and users are asked for: a store
    that cannot be opened (its directory is a file) is exit 2, nothing sent; a wrong key is
    the run's error then (exit 3, as when the service was asked first)."""
    _served_project(tmp_path, monkeypatch, KEY)
    (tmp_path / "blocked").write_text("a file where the state directory would be")
    state = ["--state-db", str(tmp_path / "blocked" / "state.db"), "--quiet"]
    with served(tmp_path / "sandbox.db") as url:
        assert cli("run", "run.yaml", "--base-url", url, *state) == 2
        assert all_records(url, "contacts") == []
        monkeypatch.setenv("RECORDSYNC_API_KEY", "sk_live_not_the_key")
        assert cli("run", "run.yaml", "--base-url", url, *state) == 3
        assert all_records(url, "contacts") == []
        monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
        state[1] = str(tmp_path / "state.db")
        assert cli("run", "run.yaml", "--base-url", url, *state) == 0
        assert len(all_records(url, "contacts")) == 5


def test_a_run_takes_its_pipelines_lock_once(
    project: Path, cli: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline's lock is taken once, before the target is bound, and held to the run's
    end (not released between the binding and the run, where another run could start)."""
    people_project(project, 3, name="locked")
    taken: list[str] = []
    acquire = PipelineLock.acquire

    def counted(self: PipelineLock) -> None:
        taken.append(self.pipeline)
        acquire(self)

    monkeypatch.setattr(PipelineLock, "acquire", counted)
    assert cli("run", "run.yaml", "--quiet", "--state-db", "st/state.db") == 0
    assert taken == ["locked"]

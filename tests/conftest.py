"""Fixtures shared across test folders."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from tests.pg_support import pg_server, pg_url  # noqa: F401  (fixtures: the session's PostgreSQL)

from recordsync import tuning
from recordsync.cli import main

# Hypothesis fails an example that takes over 200 ms by default: a wall-clock bound that a
# loaded machine breaks. Examples are bounded by max_examples alone.
settings.register_profile("recordsync", deadline=None)
settings.load_profile("recordsync")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _tuned() -> Iterator[None]:
    """Tests run tuned, as the command line runs (recordsync.tuning); a library's default,
    every tweak off, is tests/tuning/test_switches.py's."""
    with tuning.using(tuning.Tuning.all()):
        yield


@pytest.fixture(scope="session", autouse=True)
def _key_space_lock_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The key-space lock files of this test session's runs (recordsync.state.keyspace) go
    to a directory of its own, not ~/.cache: another session on this machine running the
    same pipelines against the same target must not refuse them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECORDSYNC_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The command line's cache of compiled texts (recordsync.cli.code_cache), written by the
    runs of this session (in process and in children), goes to a folder of its own, not the
    user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the sample project (pipelines, configs, sample data) as the cwd, no target env."""
    for d in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / d, tmp_path / d)
    monkeypatch.chdir(tmp_path)
    for var in ("RECORDSYNC_BASE_URL", "RECORDSYNC_API_KEY", "RECORDSYNC_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def run_cli(*args: str) -> int:
    """Run ``recordsync ARGS`` in-process and return its exit code."""
    with pytest.raises(SystemExit) as info:
        main(list(args))
    return int(info.value.code or 0)


@pytest.fixture
def cli() -> Callable[..., int]:
    return run_cli

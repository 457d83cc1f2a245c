"""Fixtures shared across test folders."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings
from tests.pg_support import pg_server, pg_url  # noqa: F401  (fixtures: the session's PostgreSQL)

from recordsync.cli import main

# Hypothesis fails an example that takes over 200 ms by default: a wall-clock bound that a
# loaded machine breaks. Examples are bounded by max_examples alone.
settings.register_profile("recordsync", deadline=None)
settings.load_profile("recordsync")

REPO = Path(__file__).resolve().parents[1]


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

"""send/pipeline.py's wiring: flags of ``recordsync run`` reach the parts they configure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recordsync.state import StateStore

from .support import people_project


@pytest.mark.parametrize(("flags", "synchronous"), [(["--durable-state"], 2), ([], 1)])
def test_durable_state_reaches_the_state_store(
    project: Path,
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    synchronous: int,
) -> None:
    """--durable-state opens the run's state database with ``synchronous=FULL`` (2: every
    commit fsynced); without it ``NORMAL`` (1)."""
    people_project(project, 3, name="wired")
    seen: list[int] = []

    class Observed(StateStore):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self.connection.execute("PRAGMA synchronous").fetchone()[0])

    monkeypatch.setattr("recordsync.state.StateStore", Observed)
    assert cli("run", "run.yaml", "--quiet", *flags) == 0
    assert seen == [synchronous]

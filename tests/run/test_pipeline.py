"""run/pipeline.py's wiring: flags of ``recordsync run`` reach the parts they configure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.send.support import people_project

from recordsync.state import StateStore


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

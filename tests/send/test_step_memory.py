"""A step keeps only the chunks it has not settled: settled chunks (their rows, their body,
their request) are freed by reference counting, not left to the cyclic garbage collector."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recordsync.send import step
from recordsync.tuning.gcpause import gc_paused
from recordsync.tuning.sizes import CHUNKS_AHEAD

from .support import people_project


@pytest.fixture
def gc_off() -> Iterator[None]:
    """The cyclic GC off for the test: only reference counting frees anything, so a chunk
    caught in a reference cycle stays alive and is counted."""
    with gc_paused():
        yield


@pytest.mark.parametrize("state", [[], ["--no-state"]])
def test_settled_chunks_are_freed_as_the_step_goes(
    project: Path,
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    gc_off: None,
    state: list[str],
) -> None:
    """30 chunks of 10 rows sent one after another: when each chunk is made, at most
    CHUNKS_AHEAD earlier chunks (the unsettled ones) and the one being reported are still alive.
    Before the fix every chunk stayed alive (chunk -> request -> trace callback -> chunk) until
    a full collection, which a long run rarely makes: peak memory grew with the rows."""
    people_project(project, 300, name="chunks", send={"chunk_size": 10, "canary_chunk_size": 10})
    made: list[weakref.ref[Any]] = []
    alive: list[int] = []

    class Counted(step.QueuedChunk):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            alive.append(sum(1 for r in made if r() is not None))
            made.append(weakref.ref(self))

    monkeypatch.setattr(step, "QueuedChunk", Counted)
    assert cli("run", "run.yaml", "--quiet", *state) == 0
    assert len(made) >= 30
    assert max(alive) <= CHUNKS_AHEAD + 2, alive

"""The step runner's order of work around an answer (send/step.py): once a chunk's answer is
in, the worker puts the next chunk on the wire before the runner collects and reports that
answer, so that work overlaps the service's time, not the gap between an answer and the next
request.

Deterministic, with no sleep racing the client: the worker holds each chunk after the first
until the runner has collected the chunk before it (or a second has passed), so a runner that
collected first would be seen collecting before the next request was written; a runner that
waits for that write first lets the worker go on once the second has passed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recordsync.send.claims import RecordClaims
from recordsync.send.sender import ChunkSender
from recordsync.send.step_gate import ChunkGate

from .support import people_project

CHUNKS = 3


def test_the_next_chunk_is_written_before_an_answer_is_collected(
    project: Path, cli: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    people_project(
        project, 10 * CHUNKS, name="order", send={"chunk_size": 10, "canary_chunk_size": 10}
    )
    written = [0]
    collected: list[int] = []  # requests written when each answer was collected
    released = [threading.Event() for _ in range(CHUNKS + 2)]
    on_sent, send, settle = ChunkGate.on_sent, ChunkSender.send, RecordClaims.settle

    def counted_on_sent(self: ChunkGate, chunk: Any) -> Callable[[], None]:
        inner = on_sent(self, chunk)

        def sent() -> None:
            written[0] += 1
            inner()

        return sent

    def held_send(self: ChunkSender, chunk_id: str, *a: Any, **kw: Any) -> Any:
        k = int(chunk_id.rsplit("#", 1)[1])
        if k > 1:  # until the chunk before is collected (a second at most)
            released[k].wait(1.0)
        return send(self, chunk_id, *a, **kw)

    def watched_settle(self: RecordClaims, *a: Any, **kw: Any) -> Any:
        collected.append(written[0])
        released[len(collected) + 1].set()
        return settle(self, *a, **kw)

    monkeypatch.setattr(ChunkGate, "on_sent", counted_on_sent)
    monkeypatch.setattr(ChunkSender, "send", held_send)
    monkeypatch.setattr(RecordClaims, "settle", watched_settle)
    assert cli("run", "run.yaml", "--quiet") == 0
    assert written[0] == CHUNKS, written
    # chunk k's answer collected once chunk k + 1 was written (the last: nothing after it)
    assert collected == [*range(2, CHUNKS + 1), CHUNKS], collected

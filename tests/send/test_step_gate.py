"""Pacing the step's reading (``ChunkGate.pace``): before the step prepares its next block of
rows, the first chunk not yet cleared to be sent is cleared once the chunk before it is
written, so the worker never waits for a block's preparation before it may send.

The queue's states are set by hand (a fake hook records what is journaled): which chunk is
written when the step reads is a matter of timing in a real run, and these tests must not
depend on timing. The invariant the real runs check (tests/e2e/test_kill_matrix_e2e.py): a
request is never written before its chunk is cleared in the journal, and at most one cleared
chunk waits unwritten."""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from recordsync.send.breaker import CircuitBreaker
from recordsync.send.step_gate import ChunkGate, QueuedChunk, paced
from recordsync.tuning import sizes

from .support import people_project


class Hook:
    """Records the chunks cleared and the transactions they were cleared in."""

    def __init__(self) -> None:
        self.cleared: list[list[int]] = []
        self.transactions = 0

    @contextmanager
    def atomic(self) -> Iterator[None]:
        self.transactions += 1
        yield

    def clear(self, plan: object, chunk_nos: list[int]) -> None:
        self.cleared.append(list(chunk_nos))

    def ack(self, *args: object) -> None:
        raise AssertionError("pacing leaves the acknowledgement to the next chunk's begin")


def gate(*chunks: QueuedChunk, traced: bool | None = True) -> tuple[ChunkGate, Hook]:
    hook = Hook()
    g = ChunkGate(hook, CircuitBreaker())  # type: ignore[arg-type]
    g.queue = deque(chunks)
    g.plan = object()  # type: ignore[assignment]
    g.traced = traced
    return g, hook


def chunk(no: int, *, cleared: bool = False, written: bool = False) -> QueuedChunk:
    c = QueuedChunk([], [], chunk_no=no)
    if cleared:
        c.cleared.set()
    if written:
        c.sent.set()
    return c


def test_paced_calls_pace_before_every_list_and_once_more_at_the_end() -> None:
    calls: list[str] = []

    def lists() -> Iterator[list[Any]]:
        for name in ("a", "b"):
            calls.append(f"make {name}")
            yield [name]

    got = []
    for block in paced(lists(), lambda: calls.append("pace")):
        got.append(block)
        calls.append(f"use {block[0]}")
    assert got == [["a"], ["b"]]
    assert calls == ["pace", "make a", "use a", "pace", "make b", "use b", "pace"]


def test_the_first_uncleared_chunk_is_cleared_once_the_one_before_is_written() -> None:
    in_flight, next_one, later = (
        chunk(4, cleared=True, written=True),
        chunk(5),
        chunk(6),
    )
    g, hook = gate(in_flight, next_one, later)
    g.to_ack = (in_flight, [])  # an answer waiting to be acknowledged: not in this commit
    g.pace()
    assert hook.cleared == [[5]] and hook.transactions == 1
    assert next_one.cleared.is_set()
    assert not later.cleared.is_set()  # its chunk before is not written: never two waiting
    assert g.to_ack == (in_flight, [])  # left to ride with the next chunk's begin


def test_a_chunk_with_none_before_it_in_the_queue_is_cleared() -> None:
    first = chunk(1)
    g, hook = gate(first)
    g.pace()
    assert hook.cleared == [[1]] and first.cleared.is_set()


def test_nothing_is_cleared_while_the_chunk_before_is_not_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sizes, "PACE_WAIT_S", 0)
    waiting, next_one = chunk(4, cleared=True), chunk(5)
    g, hook = gate(chunk(3, cleared=True, written=True), waiting, next_one)
    g.pace()
    assert hook.cleared == [] and hook.transactions == 0
    assert not next_one.cleared.is_set()


def test_the_chunk_before_is_waited_for_then_the_next_is_cleared() -> None:
    """The write of the chunk in flight happens while the step waits (at most PACE_WAIT)."""

    class WrittenWhileWaiting(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            assert timeout == sizes.PACE_WAIT_S
            self.set()
            return True

    waiting, next_one = chunk(4, cleared=True), chunk(5)
    waiting.sent = WrittenWhileWaiting()
    g, hook = gate(waiting, next_one)
    g.pace()
    assert hook.cleared == [[5]]


@pytest.mark.parametrize(
    "case", ["stopped", "untraced transport", "every chunk cleared", "no state"]
)
def test_pace_does_nothing(case: str) -> None:
    in_flight, queued = chunk(1, cleared=True), chunk(2)
    if case == "every chunk cleared":
        in_flight.sent.set()
        queued.cleared.set()
    g, hook = gate(in_flight, queued, traced=case != "untraced transport")
    g.stopped = case == "stopped"
    if case == "no state":
        g.hook = None
    g.pace()
    assert hook.cleared == [] and hook.transactions == 0


def test_a_clearance_that_fails_to_commit_leaves_the_chunk_unsendable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The worker sends a chunk only once its ``cleared`` event is set, which happens only
    after the commit. Pacing is only an early clearance: a commit that fails (a full disk)
    is logged and the chunk stays queued; the clearance the step makes before it waits for
    the chunk (or its next begin) meets the error on the usual path."""

    class FullDisk(Hook):
        def clear(self, plan: object, chunk_nos: list[int]) -> None:
            raise sqlite3.OperationalError("database or disk is full")

    in_flight, next_one = chunk(4, cleared=True, written=True), chunk(5)
    g, _ = gate(in_flight, next_one)
    g.hook = FullDisk()  # type: ignore[assignment]
    g.pace()
    assert not next_one.cleared.is_set()
    assert "clearing chunk 5 early failed (database or disk is full)" in caplog.text


def test_a_chunk_with_nothing_to_send_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk of unchanged rows is queued but never journaled nor written: the chunk before
    the first uncleared one is the last journaled chunk, not it."""
    monkeypatch.setattr(sizes, "PACE_WAIT_S", 0)
    written, nothing, next_one = chunk(4, cleared=True, written=True), chunk(0), chunk(5)
    nothing.cleared.set()  # as the runner does for a chunk it does not journal
    g, hook = gate(written, nothing, next_one)
    g.pace()
    assert hook.cleared == [[5]] and next_one.cleared.is_set()


def test_a_sending_step_paces_before_each_block_a_dry_run_never(
    project: Path, cli: Callable[..., int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner calls the pacing before it reads each block of rows (and once more when
    they are all read) when it sends, with the state store on or off; never in a dry run."""
    people_project(project, 300, name="paced", send={"chunk_size": 10, "canary_chunk_size": 10})
    calls: list[int] = []
    real = ChunkGate.pace

    def counted(self: ChunkGate) -> None:
        calls.append(len(self.queue))
        real(self)

    monkeypatch.setattr(ChunkGate, "pace", counted)
    for flags, paced_too in (([], True), (["--no-state"], True), (["--dry-run"], False)):
        calls.clear()
        assert cli("run", "run.yaml", "--quiet", *flags) == 0
        assert (len(calls) >= 2) is paced_too, (flags, calls)


class Acks(Hook):
    """Records the chunks acknowledged."""

    def __init__(self) -> None:
        super().__init__()
        self.acked: list[int] = []

    def ack(self, *args: object) -> None:
        chunk_no = args[1]
        assert isinstance(chunk_no, int)
        self.acked.append(chunk_no)


def test_an_acknowledgement_pending_is_committed_before_waiting_on_an_answer_not_in() -> None:
    hook = Acks()
    g = ChunkGate(hook, CircuitBreaker())  # type: ignore[arg-type]
    g.plan = object()  # type: ignore[assignment]
    answered, stuck = chunk(6, cleared=True, written=True), chunk(7, cleared=True, written=True)
    stuck.future = Future()  # written, never answered (a service that does not answer)
    g.to_ack = (answered, [])
    g.ack_before_waiting(stuck)
    assert hook.acked == [6] and g.to_ack is None  # a kill now leaves chunk 7 in doubt only
    # an answer already in is collected at once: the acknowledgement rides with the next begin
    done = chunk(8, cleared=True, written=True)
    done.future = Future()
    done.future.set_result((None, None))  # type: ignore[arg-type]
    g.to_ack = (stuck, [])
    g.ack_before_waiting(done)
    assert hook.acked == [6] and g.to_ack == (stuck, [])
    g.ack_before_waiting(chunk(9))  # nothing to wait on (not sent): nothing committed
    assert hook.acked == [6]

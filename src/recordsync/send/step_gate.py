"""The chunks a step keeps unsettled, and the worker's side of sending them.

A queued chunk is sent by the step's worker thread only once the journal holds it as cleared
to be sent; :class:`ChunkGate`, composed into the step runner (:mod:`recordsync.send.step`),
clears it, lets the worker wait for it to be written and holds its answer's acknowledgement
for the next chunk's begin.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field

import httpx

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RecordsyncError
from recordsync.core.model import BatchInput, Item, PreparedRow, StepPlan
from recordsync.send.breaker import CircuitBreaker
from recordsync.send.chunk_body import doubtful
from recordsync.send.plan import ChunkHook
from recordsync.send.sender import ChunkAborted, ChunkReport, ChunkSender
from recordsync.state.store import DB_ERRORS
from recordsync.tuning import sizes

log = logging.getLogger(__name__)

_COMMIT_ERRORS: tuple[type[Exception], ...] = (OSError, *DB_ERRORS)
"""What a commit of the state store raises (a file, or a PostgreSQL server)."""


def paced(lists: Iterator[list[Item]], pace: Callable[[], None]) -> Iterator[list[Item]]:
    """``lists`` with ``pace()`` called before each next list is asked for."""
    while True:
        pace()
        try:
            block = next(lists)
        except StopIteration:
            return
        yield block


class NotSent(Exception):
    """A chunk queued behind one that stopped the step: it was never sent."""


@dataclass(slots=True)
class QueuedChunk:
    rows: list[Item]
    to_send: list[PreparedRow]
    chunk_id: str = ""
    chunk_no: int = 0
    first: int = 0
    future: Future[tuple[ChunkReport, RecordsyncError | None]] | None = None
    body: bytes | None = None
    request: httpx.Request | None = None
    """The first try's request, built ahead (None: the sender builds it)."""
    sent: threading.Event = field(default_factory=threading.Event)
    """Set when the chunk's request is written, or its sending ended (or never began)."""
    cleared: threading.Event = field(default_factory=threading.Event)
    """Set once the journal holds the chunk as cleared to be sent (or it is not journaled,
    or the step stopped): the worker writes no request of it before."""


class ChunkGate:
    """The step runner's queue of unsettled chunks: the worker's send, clearing chunks to be
    sent in the journal (when the hook :attr:`~recordsync.send.plan.ChunkHook.gates_chunks`),
    and acknowledging their answers. One per :class:`recordsync.send.step.StepRunner`, told
    each step's plan by :meth:`start`."""

    def __init__(self, hook: ChunkHook | None, breaker: CircuitBreaker) -> None:
        self.hook = hook
        self.breaker = breaker
        self.queue: deque[QueuedChunk] = deque()
        """Chunks journaled and queued (or answered) but not yet settled, oldest first."""
        self.to_ack: tuple[QueuedChunk, list[EntryResult]] | None = None
        """The last answered chunk's outcome, acknowledged with the next commit."""
        self.plan: StepPlan | None = None
        """The step being run (None before the first)."""
        self.stopped = False
        """Set (on the worker thread too) when a chunk stops the step: queued chunks are not
        sent."""
        self.traced: bool | None = None
        """Whether the transport reports when a request is written (None: not known yet)."""

    def start(self, plan: StepPlan) -> None:
        """A step begins: its chunks are journaled under ``plan``."""
        self.plan = plan
        self.stopped = False

    def send(
        self, sender: ChunkSender, chunk: QueuedChunk, payloads: list[BatchInput]
    ) -> tuple[ChunkReport, RecordsyncError | None]:
        """On the worker thread: send one chunk unless an earlier one stopped the step, then
        check the breakers (a trip stops the chunks queued behind this one)."""
        try:
            chunk.cleared.wait()  # journaled as cleared to be sent, or the step stopped
            if self.stopped:
                raise NotSent
            try:
                report = sender.send(
                    chunk.chunk_id,
                    chunk.first,
                    payloads,
                    chunk.body,
                    self.on_sent(chunk),
                    request=chunk.request,
                    doubtful=doubtful(chunk.to_send),
                )
            except ChunkAborted:
                self.stopped = True
                raise
        finally:
            if not chunk.sent.is_set() and self.traced is None:
                self.traced = False  # the transport has no trace events: never wait for them
            chunk.sent.set()
        self.breaker.observe(report.results)
        try:
            self.breaker.check(f"chunk {chunk.chunk_id}, source row {chunk.first}")
        except RecordsyncError as tripped:
            self.stopped = True
            return report, tripped
        return report, None

    def clearable(self, newest: QueuedChunk) -> list[QueuedChunk]:
        """The journaled chunks not yet cleared to be sent (``newest`` last) that may be
        cleared now: in order, each one whose journaled chunk before it was written (its
        ``sent`` is set) or that has none. So at most one cleared chunk waits unwritten, and
        a resume holds in doubt only chunks that were written but for that one."""
        out: list[QueuedChunk] = []
        before_written = True
        for c in (*self.queue, newest):
            if not c.chunk_no:
                continue
            if not c.cleared.is_set():
                if not before_written:
                    break
                out.append(c)
            before_written = c.sent.is_set()
        return out

    def clear(self, chunks: list[QueuedChunk]) -> list[QueuedChunk]:
        """Journal ``chunks`` as cleared to be sent (in the caller's transaction, if any);
        their ``cleared`` events are set by the caller once that has committed."""
        if chunks and self.hook is not None and self.plan is not None:
            self.hook.clear(self.plan, [c.chunk_no for c in chunks])
        return chunks

    def ensure_cleared(self, target: QueuedChunk, *, ack: bool = True) -> None:
        """Before waiting for ``target`` to be sent: clear it and the uncleared chunks queued
        before it, in one commit with the acknowledgement pending (if any; ``ack=False``:
        that one is left to ride with the next chunk's begin)."""
        if target.cleared.is_set() or self.hook is None:
            return
        chunks: list[QueuedChunk] = []
        for c in self.queue:
            if c.chunk_no and not c.cleared.is_set():
                chunks.append(c)
            if c is target:
                break
        with self.hook.atomic():
            if ack:
                self.flush_ack()
            self.clear(chunks)
        for c in chunks:
            c.cleared.set()
        target.cleared.set()

    def pace(self) -> None:
        """Before the step reads its next block of rows (preparing them can hold the
        interpreter for tens of milliseconds): clear the first chunk not yet cleared to be
        sent, once the chunk before it is written, waiting for that write at most
        ``sizes.PACE_WAIT_S``. Otherwise the worker, done with the chunk before, would wait for
        this thread to finish the block before it may send that one (a gap of 10–35 ms
        for each slice of rows, 0.7 s of a 100k-row run into the sandbox). Clearing it
        here keeps the rule that at most one cleared chunk waits unwritten. Chunks with
        nothing to send (not journaled, never written) are passed over, as in
        :meth:`clearable`. A commit that fails is rolled back and logged: the chunk stays
        uncleared, and the clearance before it is sent (or the next begin) meets the error
        on the usual path."""
        if self.stopped or self.hook is None:
            return
        before: QueuedChunk | None = None
        for c in self.queue:
            if not c.chunk_no:
                continue
            if not c.cleared.is_set():
                break
            before = c
        else:
            return  # every journaled chunk is cleared
        if before is not None and not before.sent.is_set():
            if self.traced is False:  # no trace events: written only once it is answered
                return
            before.sent.wait(sizes.PACE_WAIT_S)
            if not before.sent.is_set() or self.stopped:
                return
        try:
            self.ensure_cleared(c, ack=False)
        except _COMMIT_ERRORS as exc:
            log.warning(
                "clearing chunk %d early failed (%s); retried before it is sent", c.chunk_no, exc
            )

    def wake_all(self) -> None:
        """The step stopped (``stopped`` is set): a worker waiting for a chunk to be
        cleared wakes and sends nothing."""
        for c in self.queue:
            c.cleared.set()

    def on_sent(self, chunk: QueuedChunk) -> Callable[[], None]:
        # holds the chunk's event, not the chunk: the transport may keep the callback (in
        # the request's trace extension) after the chunk is settled, and a chunk holds its
        # rows and its body
        event = chunk.sent

        def sent() -> None:
            self.traced = True
            event.set()

        return sent

    def ack_before_waiting(self, chunk: QueuedChunk) -> None:
        """Before the runner waits on ``chunk``'s answer: if it is not in yet, commit the
        acknowledgement still pending (it would otherwise ride with the next begin), so that
        a run stuck on a chunk the service does not answer has every answer before it
        recorded, and a kill there leaves in doubt that chunk and the one cleared behind it."""
        if chunk.future is not None and not chunk.future.done():
            self.flush_ack()

    def flush_ack(self) -> None:
        pending, self.to_ack = self.to_ack, None
        if pending is not None and self.hook is not None and self.plan is not None:
            chunk, results = pending
            self.hook.ack(self.plan, chunk.chunk_no, chunk.to_send, results)

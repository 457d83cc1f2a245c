"""The runner's hook folds acknowledged outcomes into the ledger: a slice with each
acknowledgement, every FOLD_ROWS rows while a step streams, at the step's end, and at the
run's end; a later step sees an earlier one's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.state.conftest import prepared

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import Item, PreparedRow, RowStatus, StepPlan, UnchangedBlock
from recordsync.nightly.hook import StateHook
from recordsync.nightly.opening import open_state
from recordsync.report.tally import StepTally
from recordsync.state import StateStore
from recordsync.tuning import sizes


def _plan(name: str) -> StepPlan:
    return StepPlan(name, name, "deals", lambda: [])


def _send_all(
    hook: StateHook, plan: StepPlan, rows: list[PreparedRow], size: int, *, runner: bool = False
) -> list[int]:
    """Drive the hook: ack N and begin N+1 in one transaction, or (``runner``) as the step
    runner does, each in a transaction of its own. Returns the ledger size seen before each
    chunk is begun."""
    seen: list[int] = []
    stream = iter(hook.classify(plan, rows))
    previous: tuple[int, list[PreparedRow]] | None = None
    chunk_no = 0
    while True:
        chunk = [r for _, r in zip(range(size), stream, strict=False)]
        seen.append(len(list(hook.store.entries(hook.pipeline, plan.name))))
        if runner and previous is not None:
            n, sent = previous
            hook.ack(plan, n, sent, [EntryResult(RowStatus.CREATED, 100 + n) for _ in sent])
            previous = None
        with hook.atomic():
            if previous is not None:
                n, sent = previous
                results = [EntryResult(RowStatus.CREATED, 100 + r.source.source_row) for r in sent]
                hook.ack(plan, n, sent, results)
                previous = None
            if chunk:
                chunk_no += 1
                hook.begin(plan, chunk_no, chunk)
                previous = (chunk_no, chunk)
        if not chunk:
            return seen


def test_outcomes_are_folded_while_streaming_and_at_step_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizes, "FOLD_ROWS", 4)
    monkeypatch.setattr(sizes, "CLASSIFY_ROWS", 2)
    db = tmp_path / "state.db"
    rows = [prepared(i + 2, f"k{i}", {"stage": "won"}) for i in range(12)]
    with open_state("p", db, "r1") as hook:
        seen = _send_all(hook, _plan("deals"), rows, 2)
        # folded mid-step (the ledger grew before the step ended), never ahead of the acks
        assert 0 < max(seen) < 12 and seen == sorted(seen)
        hook.step_done(_plan("deals"), StepTally("deals", "deals", "deals"))
        assert len(list(hook.store.entries("p", "deals"))) == 12
        later = [prepared(2, "k0", {"stage": "won"}), prepared(3, "new", {"stage": "won"})]
        out = list(hook.classify(_plan("deals"), later))  # a second pass sees the ledger
        assert [r.status for r in out] == [RowStatus.UNCHANGED, RowStatus.VALID]
        hook.finish("finished")
    with StateStore(db) as store:
        entry = store.get("p", "deals", "k5")
        assert entry is not None and (entry.record_id, entry.last_status) == (107, "created")


def test_each_acknowledgement_writes_a_slice_of_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizes, "FOLD_FROM", 4)
    monkeypatch.setattr(sizes, "FOLD_SLICE", 3)
    monkeypatch.setattr(sizes, "CLASSIFY_ROWS", 2)  # FOLD_ROWS (bulk) is never reached
    rows = [prepared(i + 2, f"k{i}", {"stage": "won"}) for i in range(12)]
    with open_state("p", tmp_path / "state.db", "r1") as hook:
        seen = _send_all(hook, _plan("deals"), rows, 2, runner=True)
        # chunks 1-2 acknowledged: 4 rows wait, 3 written with the second acknowledgement
        assert seen[:4] == [0, 0, 0, 3] and seen == sorted(seen) and seen[-1] < 12
        hook.step_done(_plan("deals"), StepTally("deals", "deals", "deals"))
        assert len(list(hook.store.entries("p", "deals"))) == 12
        hook.finish("finished")


def test_finish_folds_a_step_that_never_reached_its_end(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    rows = [prepared(i + 2, f"k{i}", {"stage": "won"}) for i in range(5)]
    with open_state("p", db, "r1") as hook:
        _send_all(hook, _plan("deals"), rows, 2)  # no step_done: the step stopped
        assert list(hook.store.entries("p", "deals")) == []  # below FOLD_ROWS: not yet
        hook.finish("aborted")
    with StateStore(db) as store:
        assert len(list(store.entries("p", "deals"))) == 5


def test_the_ledger_is_written_once_the_source_is_read_before_the_last_answers(
    tmp_path: Path,
) -> None:
    """source_read (the runner's last chunks in flight) writes what was acknowledged so far;
    the chunk acknowledged after it reaches the ledger at the step's end."""
    rows = [prepared(i + 2, f"k{i}", {"stage": "won"}) for i in range(5)]
    plan = _plan("deals")
    with open_state("p", tmp_path / "state.db", "r1") as hook:
        stream = list(hook.classify(plan, rows))
        first, last = stream[:3], stream[3:]
        hook.begin(plan, 1, first)
        hook.ack(plan, 1, first, [EntryResult(RowStatus.CREATED, 100 + i) for i in range(3)])
        hook.begin(plan, 2, last)
        assert list(hook.store.entries("p", "deals")) == []  # below FOLD_FROM: kept
        hook.source_read(plan)
        assert sorted(e.source_key for e in hook.store.entries("p", "deals")) == ["k0", "k1", "k2"]
        hook.ack(plan, 2, last, [EntryResult(RowStatus.UPDATED, 200 + i) for i in range(2)])
        hook.step_done(plan, StepTally("deals", "deals", "deals"))
        keys = {e.source_key: e.record_id for e in hook.store.entries("p", "deals")}
        assert keys == {"k0": 100, "k1": 101, "k2": 102, "k3": 200, "k4": 201}
        hook.finish("finished")


def test_an_early_ledger_write_that_fails_is_left_to_the_step_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """source_read must not stop a step whose last chunks are in flight: a failed write is
    rolled back (nothing lost from what was kept) and done again by step_done."""
    import sqlite3

    rows = [prepared(i + 2, f"k{i}", {"stage": "won"}) for i in range(3)]
    plan = _plan("deals")
    with open_state("p", tmp_path / "state.db", "r1") as hook:
        stream = list(hook.classify(plan, rows))
        hook.begin(plan, 1, stream)
        hook.ack(plan, 1, stream, [EntryResult(RowStatus.CREATED, 100 + i) for i in range(3)])
        real = hook.journal.ledger_fold.fold

        def failing(conn: sqlite3.Connection, run_id: str | None = None) -> int:
            real(conn, run_id)  # written, then the transaction fails: rolled back
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(hook.journal.ledger_fold, "fold", failing)
        hook.source_read(plan)  # logged, not raised
        assert "retried at its end" in caplog.text
        assert list(hook.store.entries("p", "deals")) == []
        monkeypatch.setattr(hook.journal.ledger_fold, "fold", real)
        hook.step_done(plan, StepTally("deals", "deals", "deals"))
        assert sorted(e.source_key for e in hook.store.entries("p", "deals")) == ["k0", "k1", "k2"]
        hook.finish("finished")


def test_blocks_of_unchanged_rows_are_passed_on_without_reading_ahead(tmp_path: Path) -> None:
    """A block can hold a whole source batch: the hook passes each on before it reads more
    than CLASSIFY_ROWS rows from the source (it read 500 items, whole blocks, at a time)."""
    pulled: list[int] = []

    def blocks() -> Iterator[Item]:
        for b in range(40):
            pulled.append(b)
            rows = list(range(2 + b * 100, 2 + (b + 1) * 100))
            yield UnchangedBlock("c.csv", rows, np.arange(100), ["k"] * 100, *([None] * 100,) * 3)

    with open_state("p", tmp_path / "state.db", "r1") as hook:
        stream = hook.classify(_plan("deals"), blocks())
        first = next(iter(stream))
        assert isinstance(first, UnchangedBlock) and first.source_rows[0] == 2
        assert len(pulled) <= sizes.CLASSIFY_ROWS // 100
        assert sum(len(b) for b in stream) == 3900  # the rest, all of it, in order
        hook.finish("finished")

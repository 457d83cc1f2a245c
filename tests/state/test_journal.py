"""The chunk journal: begin/ack, ledger in the same transaction, resume after kill -9."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from recordsync.core.errors import AccountingError, RecordsyncError
from recordsync.state import ChunkResult, Journal, JournalRow, StateStore

from .conftest import start_child, wait_ready


def _rows(first: int, n: int, *, safe: bool = True) -> list[JournalRow]:
    return [JournalRow(s, f"k{s}", f"h{s}", safe) for s in range(first, first + n)]


def _created(rows: list[JournalRow], base_id: int = 1000) -> list[ChunkResult]:
    return [ChunkResult(r.source_row, "created", base_id + r.source_row) for r in rows]


def test_ack_updates_ledger_and_outcomes(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    rows = _rows(2, 3)
    j.begin_chunk("r1", "contacts", 1, 2, rows)
    assert store.get("p", "contacts", "k2") is None  # begun is not acknowledged
    results = _created(rows)
    results[1] = ChunkResult(3, "failed", None, "Validation failed: email: invalid email format")
    j.ack_chunk("r1", "contacts", 1, results)
    entry = store.get("p", "contacts", "k2")
    assert entry is not None and (entry.record_id, entry.input_hash) == (1002, "h2")
    failed = store.get("p", "contacts", "k3")
    assert failed is not None and failed.last_status == "failed" and failed.input_hash is None
    outcomes = list(j.outcomes("r1"))
    assert [(o.source_row, o.status, o.record_id) for o in outcomes] == [
        (2, "created", 1002),
        (3, "failed", None),
        (4, "created", 1004),
    ]
    assert outcomes[1].error is not None and "invalid email" in outcomes[1].error
    assert j.pending_chunks() == []
    assert j.next_chunk_no("r1", "contacts") == 2


def test_mapping_defaults_to_step_and_can_differ(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    j.begin_chunk("r1", "load-companies", 1, 2, _rows(2, 1), mapping="companies")
    j.ack_chunk("r1", "load-companies", 1, _created(_rows(2, 1)))
    assert store.get("p", "companies", "k2") is not None
    assert store.get("p", "load-companies", "k2") is None


def test_ack_must_cover_every_row_exactly_once(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    rows = _rows(2, 3)
    j.begin_chunk("r1", "s", 1, 2, rows)
    with pytest.raises(AccountingError, match=r"missing source rows \[4\]"):
        j.ack_chunk("r1", "s", 1, _created(rows)[:2])
    with pytest.raises(AccountingError, match=r"unexpected \[99\]"):
        j.ack_chunk("r1", "s", 1, [*_created(rows), ChunkResult(99, "created", 1)])
    assert store.get("p", "s", "k2") is None  # nothing half-written
    j.ack_chunk("r1", "s", 1, _created(rows))
    with pytest.raises(AccountingError, match="already acked"):
        j.ack_chunk("r1", "s", 1, _created(rows))
    with pytest.raises(AccountingError, match="not journaled"):
        j.ack_chunk("r1", "s", 7, [])


def test_ack_rejects_non_final_status(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    j.begin_chunk("r1", "s", 1, 2, _rows(2, 1))
    with pytest.raises(ValueError, match="not a final status"):
        j.ack_chunk("r1", "s", 1, [ChunkResult(2, "unchanged")])


def test_a_source_row_is_journaled_once_per_step(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    j.begin_chunk("r1", "s", 1, 2, _rows(2, 3))
    with pytest.raises(AccountingError, match="already journaled"):
        j.begin_chunk("r1", "s", 2, 4, _rows(4, 2))
    j.begin_chunk("r1", "other-step", 1, 4, _rows(4, 2))  # another step may reuse numbers


def test_chunks_need_a_running_run(store: StateStore) -> None:
    j = Journal(store, "p")
    with pytest.raises(RecordsyncError, match="start_run"):
        j.begin_chunk("nope", "s", 1, 2, _rows(2, 1))
    j.start_run("r1")
    j.finish_run("r1")
    with pytest.raises(RecordsyncError, match="finished"):
        j.begin_chunk("r1", "s", 1, 2, _rows(2, 1))
    with pytest.raises(RecordsyncError, match="already finished"):
        j.start_run("r1")


def test_resume_settles_in_flight_and_accounts_every_row_once(store: StateStore) -> None:
    """A run dies with chunk 2 in flight. The resumed run reuses the run id, retries the
    resend-safe rows, holds the others in doubt, skips acknowledged rows."""
    j = Journal(store, "p")
    run, resumed = j.resume_or_start("r1")
    assert (run.run_id, resumed, run.attempts) == ("r1", False, 1)
    c1, c2 = _rows(2, 3), [*_rows(5, 2), *_rows(7, 1, safe=False)]
    j.begin_chunk("r1", "s", 1, 2, c1)
    j.ack_chunk("r1", "s", 1, _created(c1))
    j.begin_chunk("r1", "s", 2, 5, c2)
    # -- the process dies here; next attempt:
    j2 = Journal(store, "p")
    run, resumed = j2.resume_or_start("r2-would-be-new")
    assert (run.run_id, resumed, run.attempts) == ("r1", True, 2)
    assert [(c.step, c.chunk_no, len(c.rows)) for c in j2.pending_chunks()] == [("s", 2, 3)]
    held = j2.settle_in_flight("r1")
    assert [(h.source_row, h.status) for h in held] == [(7, "in_doubt")]
    assert held[0].error is not None and "could create a second record" in held[0].error
    assert j2.pending_chunks() == []
    done = j2.done_rows("r1", "s")
    assert [s for s in range(1, 10) if s in done] == [2, 3, 4, 7]
    assert 5 not in done and "x" not in done and len(done) == 4
    ledger = store.get("p", "s", "k7")
    assert ledger is not None and ledger.last_status == "in_doubt"
    # rows 5 and 6 (retry) are sent again in a new chunk of the same run
    assert j2.next_chunk_no("r1", "s") == 3
    j2.begin_chunk("r1", "s", 3, 5, _rows(5, 2))
    j2.ack_chunk("r1", "s", 3, _created(_rows(5, 2)))
    # rows 8.. were never sent before the crash: sent normally
    j2.begin_chunk("r1", "s", 4, 8, _rows(8, 2))
    j2.ack_chunk("r1", "s", 4, _created(_rows(8, 2)))
    rows = [o.source_row for o in j2.outcomes("r1", "s")]
    assert rows == [2, 3, 4, 5, 6, 7, 8, 9]  # each once
    assert j2.chunk_counts("r1") == {"acked": 3, "settled": 1}
    j2.finish_run("r1")
    assert j2.last_incomplete_run() is None
    assert list(j2.outcomes("r1")) == []  # per-row journal dropped once reported
    last = j2.last_run()
    assert last is not None and last.state == "finished" and last.finished_at is not None


def test_incomplete_run_is_per_pipeline(store: StateStore) -> None:
    Journal(store, "a").start_run("ra")
    assert Journal(store, "b").last_incomplete_run() is None
    info = Journal(store, "a").last_incomplete_run()
    assert info is not None and info.run_id == "ra"


CHILD = """
import sys, time
from recordsync.state import Journal, JournalRow, ChunkResult, StateStore
store = StateStore(sys.argv[1] if len(sys.argv) > 1 else {path!r})
j = Journal(store, "nightly")
j.start_run("run-1")
rows = [JournalRow(s, f"k{{s}}", f"h{{s}}", True) for s in range(2, 102)]
j.begin_chunk("run-1", "contacts", 1, 2, rows)
acks = [ChunkResult(r.source_row, "created", r.source_row) for r in rows]
j.ack_chunk("run-1", "contacts", 1, acks)
rows2 = [JournalRow(s, f"k{{s}}", f"h{{s}}", s % 2 == 0) for s in range(102, 202)]
j.begin_chunk("run-1", "contacts", 2, 102, rows2)
print("READY", flush=True)
time.sleep(120)
"""


def test_journal_survives_kill_9_between_begin_and_ack(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    proc = start_child(CHILD.format(path=str(path)))
    try:
        wait_ready(proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    with StateStore(path) as store:
        j = Journal(store, "nightly")
        run = j.last_incomplete_run()
        assert run is not None and run.run_id == "run-1"
        pending = j.pending_chunks()
        assert [(c.chunk_no, c.first_source_row, len(c.rows)) for c in pending] == [(2, 102, 100)]
        assert len(j.done_rows("run-1", "contacts")) == 100
        assert store.get("nightly", "contacts", "k101") is not None
        assert store.get("nightly", "contacts", "k102") is None
        held = j.settle_in_flight("run-1")
        assert len(held) == 50 and all(h.source_row % 2 == 1 for h in held)


def test_outcomes_for_finds_rows_in_any_chunk_also_acknowledged_later(store: StateStore) -> None:
    j = Journal(store, "p")
    j.start_run("r1")
    for n in range(1, 4):
        rows = _rows(10 * n, 3)
        j.begin_chunk("r1", "s", n, 10 * n, rows)
        j.ack_chunk("r1", "s", n, _created(rows))
    got = j.outcomes_for("r1", "s", [10, 32, 31, 99])
    assert {k: (o.chunk_no, o.record_id) for k, o in got.items()} == {
        10: (1, 1010),
        31: (3, 1031),
        32: (3, 1032),
    }
    j.begin_chunk("r1", "s", 4, 40, _rows(40, 2))
    assert j.outcomes_for("r1", "s", [40, 11]).keys() == {11}  # 40 is in flight: no outcome
    j.ack_chunk("r1", "s", 4, _created(_rows(40, 2)))
    assert j.outcomes_for("r1", "s", [40, 41])[41].record_id == 1041
    assert j.outcomes_for("r1", "other", [10]) == {}


def test_a_chunk_never_cleared_to_be_sent_is_retried_not_held(store: StateStore) -> None:
    """A queued chunk (journaled, never cleared: its request was never written) comes back
    as ``retry`` after a kill, even for rows that are not safe to resend; a cleared one may
    have been written, so its unsafe rows are held in doubt."""
    j = Journal(store, "p")
    j.start_run("r1")
    j.begin_chunk("r1", "deals", 1, 2, _rows(2, 2, safe=False), cleared=False)
    j.begin_chunk("r1", "deals", 2, 4, _rows(4, 2, safe=False), cleared=False)
    j.begin_chunk("r1", "deals", 3, 6, _rows(6, 2, safe=False), cleared=False)
    j.clear_chunks("r1", "deals", [1])
    assert [c.maybe_written for c in j.pending_chunks("r1")] == [True, False, False]
    held = j.settle_in_flight("r1")
    assert sorted(o.source_row for o in held) == [2, 3]
    retried = {o.source_row for o in j._journaled("r1") if o.status == "retry"}
    assert retried == {4, 5, 6, 7}
    assert j.pending_chunks("r1") == []

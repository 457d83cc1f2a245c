"""What a finished run keeps of its journal (recordsync.state.kept_outcomes): only the outcomes
the ledger cannot tell, without input hashes; ``history --key`` reads the rest from the
ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore, input_hash
from recordsync.state.history import RunHistory
from recordsync.state.journal_codec import decode

from .test_history import rec


def _key(i: int) -> str:
    return f"email:someone.{i}@example.com"


@pytest.mark.parametrize(("defer", "json"), [(True, True), (False, True), (True, False)])
def test_a_finished_run_keeps_only_what_the_ledger_cannot_tell(
    tmp_path: Path, defer: bool, json: bool
) -> None:
    """``json``: compared inside SQLite; without its JSON functions (as on PostgreSQL), the
    ledger rows are read back and compared here."""
    with StateStore(tmp_path / "state.db", durable=False) as store:
        store._json_each = json
        journal = Journal(store, "p", defer_ledger=defer)
        journal.start_run("r1")
        rows = [JournalRow(2 + i, _key(i), input_hash({"name": f"n{i}"})) for i in range(300)]
        rows[250] = JournalRow(252, None, None)  # no key: history never looks it up
        rows[260] = JournalRow(262, _key(7), input_hash({"name": "again"}))  # key 7 again
        results: list[ChunkResult] = [
            ChunkResult(r.source_row, "created", 900 + i) for i, r in enumerate(rows)
        ]
        results[10] = ChunkResult(12, "failed", None, "Validation failed: email")
        results[11] = ChunkResult(13, "in_doubt", None, "in flight when the run stopped")
        results[120] = ChunkResult(122, "created", None)  # the service gave no record id
        results[260] = ChunkResult(262, "updated", 909)  # key 7's last outcome of the run
        for n in range(3):
            part = rows[100 * n : 100 * (n + 1)]
            journal.begin_chunk("r1", "contacts", n + 1, part[0].source_row, part)
            journal.ack_chunk("r1", "contacts", n + 1, results[100 * n : 100 * (n + 1)])
        journal.finish_run("r1", keep_rows=True)
        conn = store.connection
        kept = {
            n: decode(text) for n, text in conn.execute("SELECT chunk_no, outcomes FROM chunk_log")
        }
        assert kept == {
            1: [
                [9, _key(7), None, "created", 907, None],  # replaced by a later outcome
                [12, _key(10), None, "failed", None, "Validation failed: email"],
                [13, _key(11), None, "in_doubt", None, "in flight when the run stopped"],
            ],
            2: [[122, _key(120), None, "created", None, None]],
        }  # chunk 3 repeated the ledger only: gone; its count stays
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 3
        entry = store.get("p", "contacts", _key(7))
        assert entry is not None and (entry.record_id, entry.last_status) == (909, "updated")
        RunHistory(store).record(rec("r1", "2026-11-01T02:00:00Z", state_key="p", pipeline="p"))
        events = RunHistory(store).key_events("p", _key(7))
        assert [(e.status, e.record_id, e.source_row) for e in events] == [
            ("created", 907, 9),
            ("updated", 909, None),  # the head, from the ledger
        ]
        events = RunHistory(store).key_events("p", "someone.200@example.com")
        assert [(e.run_id, e.step, e.status, e.record_id) for e in events] == [
            ("r1", "contacts", "created", 1100)
        ]
        failed = RunHistory(store).key_events("p", _key(10))
        assert [(e.status, e.error, e.source_row) for e in failed] == [
            ("failed", "Validation failed: email", 12)
        ]

"""The ledger fold (recordsync.state.ledger_fold) on its own: what it keeps of an
acknowledgement is written by a fold, and a fold that does not commit keeps it."""

from __future__ import annotations

import sqlite3

import pytest

from recordsync.state import ChunkResult, StateStore
from recordsync.state.ledger_fold import LedgerFold


def test_kept_rows_are_written_sorted_by_key_and_kept_again_when_the_write_fails(
    store: StateStore,
) -> None:
    fold = LedgerFold(store, "p")
    store.run_number("r1")
    outcomes = [ChunkResult(2, "created", 7), ChunkResult(3, "failed", None, "x")]
    fold.keep("r1", "s", "m", 1, outcomes, (["k9", "k1"], ["h9", "h1"]))
    assert fold.pending and fold.unfolded_rows == 2
    with (
        pytest.raises(sqlite3.OperationalError),
        fold.restored_on_failure(),
        store.transaction() as conn,
    ):
        fold.fold(conn)
        raise sqlite3.OperationalError("disk I/O error")
    assert fold.pending and fold.unfolded_rows == 2 and store.get("p", "m", "k9") is None
    with fold.restored_on_failure(), store.transaction() as conn:
        assert fold.fold(conn) == 2
    assert not fold.pending and fold.unfolded_rows == 0
    entry = store.get("p", "m", "k9")
    assert entry is not None and (entry.record_id, entry.input_hash) == (7, "h9")
    failed = store.get("p", "m", "k1")
    assert failed is not None and (failed.last_status, failed.record_id) == ("failed", None)

"""``recordsync state reset``: drop what the state store knows of a pipeline, or of one of
its mappings (:meth:`recordsync.state.store.StateStore.forget` calls it).

    one mapping     its ledger and its snapshots
    whole pipeline  every mapping's ledger and snapshots, and the journal of its runs

The database's rows go in one transaction (the snapshot files beside an SQLite store are
deleted inside it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recordsync.state.store import StateStore


def forget(store: StateStore, pipeline: str, mapping: str | None = None) -> int:
    """Drop the ledger of one mapping, or of every mapping of the pipeline (and then
    also its run journal). Returns the number of ledger rows removed."""
    from recordsync.state.snapshots import drop_all, snapshot_dir

    with store.transaction() as conn:
        if mapping is None:
            scopes = [
                r[0]
                for r in conn.execute(
                    "SELECT scope_id FROM scopes WHERE pipeline = ?", (pipeline,)
                )
            ]
            runs = [
                r[0]
                for r in conn.execute("SELECT run_id FROM runs WHERE pipeline = ?", (pipeline,))
            ]
            for run_id in runs:
                conn.execute("DELETE FROM chunk_log WHERE run_id = ?", (run_id,))
                conn.execute("DELETE FROM chunks WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE pipeline = ?", (pipeline,))
        else:
            scope = store.scope_id(pipeline, mapping, create=False)
            scopes = [] if scope is None else [scope]
        drop_all(conn, snapshot_dir(store), scopes)
        removed = 0
        for scope in scopes:
            cur = conn.execute("DELETE FROM ledger WHERE scope_id = ?", (scope,))
            removed += cur.rowcount
            conn.execute("DELETE FROM scopes WHERE scope_id = ?", (scope,))
    return removed

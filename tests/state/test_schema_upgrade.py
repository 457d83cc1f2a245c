"""Upgrading a state database written by an older recordsync: version 2 kept the journal
one row a source row (``chunk_rows``); version 3 keeps it one record a chunk (``chunk_log``).
A run that died under version 2 resumes under version 3 with every row accounted for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore
from recordsync.state.schema import _V1, _V2, SCHEMA_VERSION


def _version_2_with_a_dead_run(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for script in (_V1, _V2):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO runs (run_id, pipeline, state, started_at) VALUES"
        " ('r1', 'p', 'running', '2026-11-01T00:00:00.000Z')"
    )
    conn.execute("INSERT INTO scopes (pipeline, mapping) VALUES ('p', 's')")
    for chunk_no, state in ((1, "acked"), (2, "begun")):
        conn.execute(
            "INSERT INTO chunks (run_id, step, chunk_no, mapping, first_source_row, row_count,"
            " state, begun_at) VALUES ('r1', 's', ?, 's', ?, 3, ?, 'x')",
            (chunk_no, 3 * chunk_no - 1, state),
        )
    rows = [  # chunk 1 acknowledged (row 3 failed), chunk 2 in flight (row 7 not resend-safe)
        (1, 2, "k2", "h2", 1, "created", 102, None),
        (1, 3, "k3", "h3", 1, "failed", None, "Validation failed: nul\x00inside"),
        (1, 4, "k4", "h4", 1, "updated", 104, None),
        (2, 5, "k5", "h5", 1, "pending", None, None),
        (2, 6, "k6", "h6", 1, "pending", None, None),
        (2, 7, "k\x007", "h7", 0, "pending", None, None),
    ]
    conn.executemany(
        "INSERT INTO chunk_rows (run_id, step, chunk_no, source_row, source_key, input_hash,"
        " resend_safe, status, record_id, error) VALUES ('r1', 's', ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.close()


def test_a_version_2_journal_is_copied_and_its_run_resumes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _version_2_with_a_dead_run(path)
    with StateStore(path, durable=False) as store:
        conn = store.connection
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "chunk_rows" not in names and "chunk_log" in names
        j = Journal(store, "p", defer_ledger=True)
        info, resumed = j.resume_or_start("new")
        assert (info.run_id, resumed) == ("r1", True)
        outcomes = list(j.outcomes("r1", "s"))
        assert [(o.source_row, o.status, o.record_id, o.error) for o in outcomes] == [
            (2, "created", 102, None),
            (3, "failed", None, "Validation failed: nul\x00inside"),
            (4, "updated", 104, None),
        ]
        entry = store.get("p", "s", "k4")  # folded on resume, from the copied journal
        assert entry is not None and (entry.record_id, entry.input_hash) == (104, "h4")
        [pending] = j.pending_chunks("r1")
        assert pending.rows == [
            JournalRow(5, "k5", "h5", True),
            JournalRow(6, "k6", "h6", True),
            JournalRow(7, "k\x007", "h7", False),
        ]
        held = j.settle_in_flight("r1")
        assert [(h.source_row, h.source_key, h.status) for h in held] == [(7, "k\x007", "in_doubt")]
        done = j.done_rows("r1", "s")
        assert [n for n in range(1, 9) if n in done] == [2, 3, 4, 7]
        assert j.outcomes_for("r1", "s", [3, 4, 5])[4].record_id == 104
        # rows 5 and 6 were settled as safe to resend: a new chunk of the same run takes them
        j.begin_chunk("r1", "s", 3, 5, [JournalRow(5, "k5", "h5"), JournalRow(6, "k6", "h6")])
        j.ack_chunk("r1", "s", 3, [ChunkResult(5, "created", 105), ChunkResult(6, "created", 106)])
        j.finish_run("r1")
        assert [store.get("p", "s", k) is not None for k in ("k5", "k6", "k\x007")] == [True] * 3
        doubt = store.get("p", "s", "k\x007")
        assert doubt is not None and doubt.last_status == "in_doubt"

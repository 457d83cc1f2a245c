"""The run history in the state store (schema version 5): records, the alert state, the
volume baseline, a key's events read from the kept journal and the ledger, the retention,
and the upgrade of a version 4 database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore
from recordsync.state.history import HistoryRecord, RunHistory
from recordsync.state.journal_codec import PACKED
from recordsync.state.mirror import apply_deletes, plan_deletes
from recordsync.state.schema import _V1, _V2, _V3, _V4, SCHEMA_VERSION


def rec(
    run_id: str, started: str, *, rows: int = 10, exit_code: int = 0, **kw: object
) -> HistoryRecord:
    step = {"step": "s", "mapping": "m.yaml", "rows_read": rows, "aborted": False, "guarded": False}
    step.update(kw.pop("step", {}))  # type: ignore[call-overload]
    fields: dict[str, object] = {
        "run_id": run_id,
        "pipeline": "p",
        "state_key": "p\x1f1",
        "target": "http://127.0.0.1:1",
        "started_at": started,
        "finished_at": started,
        "exit_code": exit_code,
        "report_dir": f"reports/{run_id}",
        "whole_run": True,
        "steps": [step],
        "totals": {"rows_read": rows},
        **kw,
    }
    return HistoryRecord(**fields)  # type: ignore[arg-type]


def test_records_read_back_newest_first_with_the_alert_state(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        runs.record(rec("r1", "2026-11-01T02:00:00Z"))
        runs.record(
            rec(
                "r2",
                "2026-11-02T02:00:00Z",
                conditions=[{"id": "volume", "reason": "x"}],
                alerted=["volume"],
            )
        )
        runs.record(rec("r2", "2026-11-02T02:00:00Z", alerted=["volume", "failed"]))  # replaced
        assert [r.run_id for r in runs.runs("p")] == ["r2", "r1"]
        assert runs.runs("other") == []
        assert [r.run_id for r in runs.runs(since="2026-11-02T00:00:00Z")] == ["r2"]
        last = runs.last("p\x1f1")
        assert last is not None and last.alerted == ["volume", "failed"]
        assert runs.last("p\x1f2") is None
        assert runs.pipelines() == ["p"]


def test_the_baseline_is_the_last_healthy_whole_runs_of_the_step(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        runs.record(rec("r1", "2026-11-01T02:00:00Z", rows=100))
        runs.record(rec("r2", "2026-11-02T02:00:00Z", rows=110, exit_code=1))
        runs.record(rec("r3", "2026-11-03T02:00:00Z", rows=120))
        runs.record(rec("r4", "2026-11-04T02:00:00Z", rows=130))
        runs.record(rec("r5", "2026-11-05T02:00:00Z", rows=5, step={"guarded": True}))
        runs.record(rec("r6", "2026-11-06T02:00:00Z", rows=7, exit_code=3))  # stopped
        runs.record(rec("r7", "2026-11-07T02:00:00Z", rows=8, whole_run=False))  # a retry
        runs.record(rec("r8", "2026-11-08T02:00:00Z", rows=9, step={"aborted": True}))
        assert runs.baseline("p\x1f1", "s", "m.yaml") == [130, 120, 110]
        assert runs.baseline("p\x1f1", "s", "other.yaml") == []
        assert runs.baseline("p\x1f2", "s", "m.yaml") == []


def _journaled_run(store: StateStore, run_id: str, outcomes: list[ChunkResult]) -> None:
    j = Journal(store, "p\x1f1")
    j.start_run(run_id)
    rows = [JournalRow(o.source_row, f"k{o.source_row}", f"h{o.source_row}") for o in outcomes]
    j.begin_chunk(run_id, "s", 1, 1, rows)
    j.ack_chunk(run_id, "s", 1, outcomes)
    j.finish_run(run_id, keep_rows=True)


def test_a_keys_events_come_from_the_kept_journal_and_the_ledger(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        _journaled_run(
            store,
            "r1",
            [ChunkResult(i, "created", 100 + i) for i in (1, 2, 3)],
        )
        runs.record(rec("r1", "2026-11-01T02:00:00Z"))
        _journaled_run(store, "r2", [ChunkResult(1, "failed", None, "Validation failed: x")])
        runs.record(rec("r2", "2026-11-02T02:00:00Z"))
        plan = plan_deletes(store, "p\x1f1", "s", ["k1", "k3"], max_count=None, max_share=None)
        apply_deletes(plan, lambda rid: None, run_id="r2")
        events = runs.key_events("p", "k1")
        # the failure, with its reason, is kept; r1's creation was the ledger's until r2
        assert [(e.run_id, e.status, e.record_id, e.error) for e in events] == [
            ("r2", "failed", None, "Validation failed: x"),
        ]
        gone = runs.key_events("p", "k2")
        assert [(e.run_id, e.status, e.record_id) for e in gone] == [("r2", "deleted", 102)]
        k3 = runs.key_events("p", "k3")  # the last send, from the ledger (no source row)
        assert [(e.run_id, e.step, e.status, e.record_id, e.source_row) for e in k3] == [
            ("r1", "s", "created", 103, None)
        ]
        assert runs.key_events("p", "k") == []  # a key is matched whole, never as a part
        assert runs.key_events("p", "k%") == []
        assert runs.key_events("p", "_1") == []


def test_a_keys_events_are_found_in_compressed_chunks(tmp_path: Path) -> None:
    """A chunk of a hundred rows is kept compressed (state.journal_codec): still searched."""
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        outcomes = [ChunkResult(i, "failed", None, f"refused {i}") for i in range(1, 101)]
        _journaled_run(store, "r1", outcomes)
        runs.record(rec("r1", "2026-11-01T02:00:00Z"))
        (text,) = store.connection.execute("SELECT outcomes FROM chunk_log").fetchone()
        assert text.startswith(PACKED)
        events = runs.key_events("p", "k57")
        assert [(e.run_id, e.status, e.error, e.source_row) for e in events] == [
            ("r1", "failed", "refused 57", 57)
        ]


def test_a_keys_events_follow_the_runs_order_within_one_second(tmp_path: Path) -> None:
    """Run ids end in a random tag: two runs started in the same second are told apart by
    the order they were kept in, not by their ids."""
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        _journaled_run(store, "t-zz", [ChunkResult(1, "failed", None, "refused")])
        runs.record(rec("t-zz", "2026-11-01T02:00:00Z"))
        _journaled_run(store, "t-aa", [ChunkResult(1, "updated", 101)])
        runs.record(rec("t-aa", "2026-11-01T02:00:00Z"))
        events = runs.key_events("p", "k1")  # a kept failure, then the ledger's last send
        assert [(e.run_id, e.status) for e in events] == [("t-zz", "failed"), ("t-aa", "updated")]


def test_the_retention_prunes_old_runs_but_never_the_ledger_or_a_running_run(
    tmp_path: Path,
) -> None:
    with StateStore(tmp_path / "s.db", durable=False) as store:
        runs = RunHistory(store)
        _journaled_run(
            store, "r1", [ChunkResult(1, "created", 101), ChunkResult(2, "failed", None, "e1")]
        )
        runs.record(rec("r1", "2026-01-01T02:00:00Z"))
        _journaled_run(
            store, "r2", [ChunkResult(1, "updated", 101), ChunkResult(2, "failed", None, "e2")]
        )
        runs.record(rec("r2", "2026-11-01T02:00:00Z"))
        conn = store.connection
        conn.execute("UPDATE runs SET started_at = '2026-01-01T02:00:00.000Z' WHERE run_id = 'r1'")
        Journal(store, "p\x1f1").start_run("r0")  # a run that died, long ago: resumable
        conn.execute("UPDATE runs SET started_at = '2025-01-01T00:00:00.000Z' WHERE run_id = 'r0'")
        assert runs.prune("p\x1f1", "2026-06-01T00:00:00Z") == 1
        assert [r.run_id for r in runs.runs("p")] == ["r2"]
        kept = {r[0] for r in conn.execute("SELECT run_id FROM runs")}
        assert kept == {"r0", "r2"}
        assert {r[0] for r in conn.execute("SELECT run_id FROM chunk_log")} == {"r2"}
        entry = store.get("p\x1f1", "s", "k1")
        assert entry is not None and entry.record_id == 101
        # the newest record stays, however old: it holds the alert state
        assert runs.prune("p\x1f1", "2027-01-01T00:00:00Z") == 0
        assert [r.run_id for r in runs.runs("p")] == ["r2"]


def test_a_version_4_database_is_upgraded_to_5(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in (_V1, _V2, _V3, _V4):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    conn.execute(
        "INSERT INTO runs (run_id, pipeline, state, started_at) VALUES"
        " ('r1', 'p', 'running', '2026-11-01T00:00:00.000Z')"
    )
    conn.close()
    with StateStore(path, durable=False) as store:
        assert store.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 5
        assert Journal(store, "p").last_incomplete_run() is not None  # kept, resumable
        RunHistory(store).record(rec("r2", "2026-11-02T02:00:00Z"))
        assert [r.run_id for r in RunHistory(store).runs()] == ["r2"]


def test_on_postgresql_a_version_4_database_is_upgraded_and_the_history_works(
    pg_url: str,
) -> None:
    with StateStore(pg_url) as store:  # made at version 5, then taken back to version 4
        store.connection.execute("DROP TABLE run_history")
        store.connection.execute("UPDATE state_meta SET value = '4' WHERE key = 'schema_version'")
    with StateStore(pg_url) as store:
        version = store.connection.execute(
            "SELECT value FROM state_meta WHERE key = 'schema_version'"
        ).fetchone()[0]
        assert version == str(SCHEMA_VERSION)
        runs = RunHistory(store)
        _journaled_run(
            store, "r1", [ChunkResult(1, "created", 101), ChunkResult(2, "failed", None, "e1")]
        )
        runs.record(rec("r1", "2026-01-01T02:00:00Z"))
        _journaled_run(store, "r2", [ChunkResult(1, "updated", 101)])
        runs.record(rec("r2", "2026-11-01T02:00:00Z", rows=12))
        events = runs.key_events("p", "k1")
        assert [(e.run_id, e.status, e.record_id) for e in events] == [("r2", "updated", 101)]
        failed = runs.key_events("p", "k2")
        assert [(e.run_id, e.status, e.error) for e in failed] == [("r1", "failed", "e1")]
        assert runs.key_events("p", "k_") == []
        assert runs.baseline("p\x1f1", "s", "m.yaml") == [12, 10]
        store.connection.execute(
            "UPDATE runs SET started_at = '2026-01-01T02:00:00.000Z' WHERE run_id = 'r1'"
        )
        assert runs.prune("p\x1f1", "2026-06-01T00:00:00Z") == 1
        assert [r.run_id for r in runs.runs("p")] == ["r2"]

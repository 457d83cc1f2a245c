"""The SQLite state file between runs holds the ledger, not the free pages of the largest
run's journal: a finished run gives them back (new files: incremental auto-vacuum; a file
made before that: converted once by a VACUUM when at least half of it is free)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore, journal_codec
from recordsync.state import store as store_module


def pragma(store: StateStore, name: str) -> int:
    return int(store.connection.execute(f"PRAGMA {name}").fetchone()[0])


def one_run(store: StateStore, run_id: str, rows: int, *, first_key: int = 0) -> None:
    """A run journaling ``rows`` rows in chunks of 100, every one created."""
    journal = Journal(store, "p", defer_ledger=True)
    journal.start_run(run_id)
    for chunk_no, start in enumerate(range(0, rows, 100), start=1):
        part = [
            JournalRow(2 + i, f"email:someone.{first_key + i}@example.com", f"{i:032x}", True)
            for i in range(start, min(start + 100, rows))
        ]
        journal.begin_chunk(run_id, "contacts", chunk_no, part[0].source_row, part)
        journal.ack_chunk(
            run_id,
            "contacts",
            chunk_no,
            [ChunkResult(r.source_row, "created", 10_000 + r.source_row) for r in part],
        )
    journal.finish_run(run_id)


def test_a_finished_run_leaves_no_free_pages(store: StateStore) -> None:
    assert pragma(store, "auto_vacuum") == store_module.AUTO_VACUUM_INCREMENTAL
    one_run(store, "r1", 3000)
    assert pragma(store, "freelist_count") == 0
    pages = pragma(store, "page_count")
    assert len(store.lookup_many("p", "contacts", ["email:someone.7@example.com"])) == 1
    one_run(store, "r2", 3000)  # the same keys again: the ledger does not grow
    assert pragma(store, "freelist_count") == 0
    assert pragma(store, "page_count") <= pages + 2
    size = (store.path.stat().st_size + 4095) // 4096
    assert size <= pages + 2  # the file itself shrank (the log was checkpointed and cut)


def test_a_file_made_without_auto_vacuum_is_converted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    with StateStore(path) as store:
        store.connection.execute("PRAGMA auto_vacuum = NONE")
        store.connection.execute("VACUUM")  # as a file made before auto-vacuum was set
        assert pragma(store, "auto_vacuum") == 0
    monkeypatch.setattr(store_module, "VACUUM_FROM_PAGES", 10**9)
    monkeypatch.setattr(journal_codec, "PACK_FROM", 10**9)  # the JSON journal of old
    with StateStore(path) as store:
        assert pragma(store, "auto_vacuum") == 0  # an existing file keeps its mode on open
        one_run(store, "r1", 3000)
        assert pragma(store, "freelist_count") > 0  # too few free pages to rewrite it for
    monkeypatch.undo()
    monkeypatch.setattr(store_module, "VACUUM_FROM_PAGES", 8)
    with StateStore(path) as store:
        one_run(store, "r2", 100)  # the free pages of the old run's journal: converted
        assert pragma(store, "auto_vacuum") == store_module.AUTO_VACUUM_INCREMENTAL
        assert pragma(store, "freelist_count") == 0
        assert len(list(store.entries("p", "contacts"))) == 3000


def test_a_busy_file_is_left_for_the_next_time(store: StateStore) -> None:
    """Another process reading the file (another pipeline's run) does not fail this one."""
    one_run(store, "r1", 500)
    journal = Journal(store, "p", defer_ledger=True)
    journal.start_run("r2")
    rows = [JournalRow(2 + i, f"k{i}", "h", True) for i in range(100)]
    journal.begin_chunk("r2", "contacts", 1, 2, rows)
    journal.ack_chunk("r2", "contacts", 1, [ChunkResult(r.source_row, "created", 1) for r in rows])
    other = sqlite3.connect(store.path, timeout=0.01)
    other.execute("PRAGMA busy_timeout = 10")
    store.connection.execute("PRAGMA busy_timeout = 10")
    other.execute("BEGIN IMMEDIATE")  # a writer elsewhere holds the file
    try:
        assert store.release_free_pages() == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    journal.finish_run("r2")
    assert pragma(store, "freelist_count") == 0

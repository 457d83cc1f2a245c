"""Background checkpoints of the state database's write-ahead log (state/checkpoint.py).

No clock and no machine load in the checks: the log's bound is checked with checkpoints run
between commits by the test itself; the thread is checked to run them, whenever it gets to."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from recordsync.nightly.opening import open_state
from recordsync.state import StateStore
from recordsync.state.checkpoint import BackgroundCheckpoints, checkpoint_once

ROUND_ROWS = 1000


def _wal(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def _commit(conn: sqlite3.Connection, i: int) -> int:
    """Commit one transaction of about 400 kB; return the log's size (bytes) after it."""
    with conn:
        conn.executemany(
            "INSERT INTO t (k, v) VALUES (?, ?)",
            ((f"{i}-{j}", "x" * 300) for j in range(ROUND_ROWS)),
        )
    return _wal(Path(conn.execute("PRAGMA database_list").fetchone()[2])).stat().st_size


def _writer(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # only checkpoints from elsewhere
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
    return conn


def test_a_checkpoint_from_another_connection_lets_the_writer_start_the_log_over(
    tmp_path: Path,
) -> None:
    """30 commits: without checkpoints the log holds all of them; with one passive checkpoint
    (from a second connection, as the thread runs it) after each commit, about one."""
    alone = _writer(tmp_path / "alone.db")
    unchecked = max(_commit(alone, i) for i in range(30))
    db = tmp_path / "db.db"
    conn = _writer(db)
    other = sqlite3.connect(db, isolation_level=None, timeout=0)
    first = _commit(conn, 0)
    copied = 0
    largest = first
    for i in range(1, 30):
        copied += checkpoint_once(other)
        largest = max(largest, _commit(conn, i))
    assert copied == 29
    assert largest <= 2 * first < unchecked / 10  # the writer started the log over each time
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (30 * ROUND_ROWS,)
    for c in (conn, other, alone):
        c.close()


def test_the_thread_copies_the_log_of_a_commit(tmp_path: Path) -> None:
    """The thread checkpoints a committed log whenever it gets to run (the wait below only
    guards against a hang: a loaded machine makes it longer, never wrong)."""
    db = tmp_path / "db.db"
    conn = _writer(db)
    with BackgroundCheckpoints(db, every_s=0.001) as background:
        _commit(conn, 0)
        for _ in range(60_000):
            if background.checkpoints:
                break
            time.sleep(0.001)
    assert background.checkpoints > 0
    other = sqlite3.connect(db, isolation_level=None)
    busy, frames, copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == copied > 0
    for c in (conn, other):
        c.close()


def test_close_stops_the_thread_and_failures_never_escape(tmp_path: Path) -> None:
    background = BackgroundCheckpoints(tmp_path / "missing" / "state.db", every_s=0.001)
    background.close()  # cannot open the database: logged, tried again, never raised
    background.close()  # idempotent
    assert background.checkpoints == 0
    assert not background._thread.is_alive()


def test_a_run_checkpoints_in_the_background_and_ends_with_no_log(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with open_state("p", db, "r1") as hook:
        background = hook.background
        assert background is not None and background._thread.is_alive()
        hook.finish("finished")
        assert not background._thread.is_alive()  # stopped before the final checkpoint
    assert not background._thread.is_alive()
    assert not _wal(db).exists() or _wal(db).stat().st_size == 0
    with StateStore(db) as store:
        assert store.connection.execute("SELECT state FROM runs").fetchall() == [("finished",)]

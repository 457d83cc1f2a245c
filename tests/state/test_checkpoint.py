"""Background checkpoints of the state database's write-ahead log (state/checkpoint.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from recordsync.send.state_hook import open_state
from recordsync.state import StateStore
from recordsync.state.checkpoint import BackgroundCheckpoints


def _wal(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def _write(conn: sqlite3.Connection, rounds: int, seconds: float) -> int:
    """Commit ``rounds`` transactions of about 400 kB, over about ``seconds``; return the
    log's largest size (bytes) seen after a commit."""
    largest = 0
    for i in range(rounds):
        with conn:
            conn.executemany(
                "INSERT INTO t (k, v) VALUES (?, ?)",
                ((f"{i}-{j}", "x" * 300) for j in range(1000)),
            )
        largest = max(
            largest, _wal(Path(conn.execute("PRAGMA database_list").fetchone()[2])).stat().st_size
        )
        time.sleep(seconds / rounds)
    return largest


def _writer(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # only checkpoints from elsewhere
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
    return conn


def test_the_log_stays_small_while_a_writer_writes(tmp_path: Path) -> None:
    alone = _writer(tmp_path / "alone.db")
    unchecked = _write(alone, 30, 0.6)
    conn = _writer(tmp_path / "db.db")
    with BackgroundCheckpoints(tmp_path / "db.db", every_s=0.02) as background:
        checked = _write(conn, 30, 0.6)
        time.sleep(0.1)
    assert background.checkpoints > 0
    assert checked < unchecked / 3  # the writer started the log over, again and again
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (30_000,)
    conn.close()
    alone.close()


def test_close_stops_the_thread_and_failures_never_escape(tmp_path: Path) -> None:
    before = threading.active_count()
    background = BackgroundCheckpoints(tmp_path / "missing" / "state.db", every_s=0.01)
    time.sleep(0.05)  # cannot open the database: logged, tried again, never raised
    background.close()
    background.close()  # idempotent
    assert background.checkpoints == 0
    assert threading.active_count() == before


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

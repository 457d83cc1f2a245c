"""The state store on a real PostgreSQL (tests/pg_support.py starts it): the ledger,
journal, snapshots kept in the database, the schema version, the advisory lock across
processes (kill -9 included), and a password that never shows."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.pg_support import PASSWORD, database_url

from recordsync.core.errors import (
    EXIT_ABORTED,
    EXIT_CONFIG,
    AccountingError,
    ConfigError,
    RunAborted,
    exit_code_for,
)
from recordsync.state import Journal, StateStore
from recordsync.state.location import PgUrl, state_location
from recordsync.state.mirror import plan_deletes
from recordsync.state.pg import SCHEMA_VERSION
from recordsync.state.pg_lock import PgPipelineLock, lock_key
from recordsync.state.snapshot_codec import SNAPSHOT_FILE_SCHEMA
from recordsync.state.snapshots import SnapshotWriter, take
from recordsync.tuning import sizes

from .conftest import start_child, wait_ready


@pytest.fixture
def pg(pg_url: str) -> Iterator[StateStore]:
    with StateStore(pg_url) as store:
        yield store


def test_a_url_never_shows_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    url = PgUrl(f"postgresql://app:{PASSWORD}@db.example:5432/state?sslmode=require")
    for shown in (str(url), repr(url), f"{url}", f"{url:>10}", url.hide(url.reveal())):
        assert PASSWORD not in shown
        assert "app:**********@db.example:5432/state?sslmode=require" in shown
    assert url.hide(f"failed for {PASSWORD}!") == "failed for **********!"
    escaped = PgUrl("postgresql://app:p%40ss%2Fw@db/state")
    assert str(escaped) == "postgresql://app:**********@db/state"
    assert escaped.hide("p@ss/w or p%40ss%2Fw") == "********** or **********"
    query = PgUrl(f"postgresql:///state?host=/run/pg&password={PASSWORD}")
    assert PASSWORD not in str(query) and "password=**********" in str(query)
    with pytest.raises(TypeError):
        __import__("pickle").dumps(url)
    monkeypatch.setenv("RECORDSYNC_STATE_DB", f"postgres://app:{PASSWORD}@h/s")
    assert isinstance(state_location(None), PgUrl)
    monkeypatch.setenv("RECORDSYNC_STATE_DB", "/data/state.db")
    assert state_location(None) == Path("/data/state.db")


def test_ledger_round_trip(pg: StateStore) -> None:
    assert pg.is_postgres
    pg.record_acknowledged("p", "m", "r1", [("b", 5, "h1", "created"), ("a", 6, "h", "created")])
    pg.record_acknowledged(
        "p", "m", "r2", [("b", None, "h2", "failed"), ("a", None, "h3", "updated")]
    )
    found = pg.lookup_many("p", "m", ["a", "b", "zz"])
    assert (found["b"].record_id, found["b"].input_hash, found["b"].last_status) == (
        5,
        "h1",
        "failed",
    )
    assert (found["a"].record_id, found["a"].input_hash, found["a"].last_status) == (
        6,
        "h3",
        "updated",
    )
    many = [(f"k{i}", i, "h", "created") for i in range(2345)]  # several lookups of 1000
    pg.record_acknowledged("p", "n", "r", many)
    assert len(pg.lookup_many("p", "n", (k for k, *_ in many))) == 2345
    assert list(pg.keys("p", "m")) == ["a", "b"]
    assert pg.counts("p") == {"m": {"failed": 1, "updated": 1}, "n": {"created": 2345}}
    with pytest.raises(RuntimeError), pg.transaction():
        pg.record_acknowledged("p", "m", "r3", [("c", 1, "h", "created")])
        raise RuntimeError("boom")
    assert pg.get("p", "m", "c") is None
    assert pg.forget("p", "m") == 2 and pg.mappings("p") == ["n"]


def test_mirror_plan_on_postgres(pg: StateStore) -> None:
    pg.record_acknowledged("p", "m", "r", [(k, i, "h", "created") for i, k in enumerate("abc")])
    plan = plan_deletes(pg, "p", "m", ["a", "b", "b", "new"], max_count=None, max_share=None)
    assert [d[0] for d in plan.deletes] == ["c"] and plan.seen_keys == 3


def test_journal_resume_on_postgres(pg_url: str) -> None:
    with StateStore(pg_url) as store:
        j = Journal(store, "p", defer_ledger=True)
        run, resumed = j.resume_or_start("run1")
        assert not resumed
        j.begin_chunk("run1", "m", 1, 1, [(1, "a", "ha"), (2, "b", "hb")])
        j.ack_chunk("run1", "m", 1, [(1, "created", 10, None), (2, "failed", None, "no")])
        j.begin_chunk("run1", "m", 2, 3, [(3, "c", "hc", False)])  # in flight when "killed"
        with pytest.raises(AccountingError, match="already journaled"):
            j.begin_chunk("run1", "m", 2, 9, [(9, "z", "hz")])
    with StateStore(pg_url) as store:  # another process, another worker: the same journal
        j = Journal(store, "p", defer_ledger=True)
        run, resumed = j.resume_or_start("run2")
        assert resumed and run.run_id == "run1" and run.attempts == 2
        assert store.get("p", "m", "a").record_id == 10  # type: ignore[union-attr]
        held = j.settle_in_flight("run1")
        assert [h.source_row for h in held] == [3]  # not resend-safe: held in doubt
        assert {o.source_row: o.status for o in j.outcomes("run1")} == {
            1: "created",
            2: "failed",
            3: "in_doubt",
        }
        j.finish_run("run1")
        assert j.last_incomplete_run() is None and j.last_run().state == "finished"  # type: ignore[union-attr]


def _snapshot_files() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("recordsync-*scope*")}


def test_snapshots_live_in_the_database(pg_url: str, tmp_path: Path) -> None:
    before = _snapshot_files()
    with StateStore(pg_url) as store:
        store.scope_id("p", "m")
        writer = SnapshotWriter(store, "p", "m", "run1")
        n = 70_000  # more than one flush, and several blocks of the file
        for i in range(n):
            writer.add((i, i * 7), f"key{i}", "email", f"v{i}@x", i + 1)
        writer.commit(b"fp-1")
        assert store.connection.execute("SELECT count(*) FROM snapshot_blocks").fetchone()[0] >= 1
    assert _snapshot_files() == before  # no file is kept on this worker
    with StateStore(pg_url) as store:  # the next run, anywhere
        snap = take(store, "p", "m", b"fp-1")
        assert snap is not None and len(snap) == n
        assert snap.table.schema == SNAPSHOT_FILE_SCHEMA
        assert snap.column("key", __import__("numpy").array([0, n - 1])) == ["key0", f"key{n - 1}"]
        assert take(store, "p", "m", b"fp-1") is None  # taken: unregistered
        writer = SnapshotWriter(store, "p", "m", "run2")
        writer.add((1, 2), "k", None, None, 1)
        writer.commit(b"fp-2")
        assert take(store, "p", "m", b"other") is None  # another fingerprint: dropped
        left = store.connection.execute("SELECT count(*) FROM snapshot_blocks").fetchone()[0]
        assert left == 0
    assert _snapshot_files() == before


def test_a_snapshot_missing_a_block_is_not_trusted(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(sizes, "SNAPSHOT_BLOCK_BYTES", 4096)  # many blocks for a small snapshot
    before = _snapshot_files()
    with StateStore(pg_url) as store:
        store.scope_id("p", "m")
        writer = SnapshotWriter(store, "p", "m", "run1")
        for i in range(2_000):
            writer.add((i, i * 7), f"key{i}", "email", f"v{i}@x", i + 1)
        writer.commit(b"fp-1")
        count = store.connection.execute("SELECT count(*) FROM snapshot_blocks").fetchone()[0]
        assert count > 3
        store.connection.execute("DELETE FROM snapshot_blocks WHERE block_no = 1")
        assert take(store, "p", "m", b"fp-1") is None  # damaged: the full path runs
    assert _snapshot_files() == before


def test_a_newer_schema_is_refused_naming_the_url(pg_server: str, pg_url: str) -> None:
    StateStore(pg_url).close()
    StateStore(pg_url).close()  # opening again changes nothing
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE state_meta SET value = %s", (str(SCHEMA_VERSION + 1),))
    name = pg_url.split("/")[3].split("?")[0]
    with pytest.raises(ConfigError) as info:
        StateStore(database_url(pg_server, name, password=PASSWORD))
    text = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in text and "upgrade recordsync" in text
    assert f"/{name}?" in text and PASSWORD not in text


def test_unreachable_database_is_a_config_error_without_the_password(pg_server: str) -> None:
    missing = database_url(pg_server, "no_such_db", password=PASSWORD)
    port = pg_server.rsplit("port=", 1)[1]
    refused = missing.replace(f"port={port}", f"port={int(port) + 1}")
    for url in (missing, refused):
        with pytest.raises(ConfigError) as info:
            StateStore(url)
        text = str(info.value)
        assert "cannot connect to the PostgreSQL state database" in text
        assert "postgres:**********@/no_such_db" in text and "PGPASSWORD" in text
        assert PASSWORD not in text and PASSWORD not in repr(info.value.__cause__)
        assert exit_code_for(info.value) == EXIT_CONFIG
    with pytest.raises(ConfigError, match="does not exist"):
        StateStore(missing)


HOLDER = """
import time
from recordsync.state import StateStore
from recordsync.tuning import sizes
store = StateStore({url!r})
lock = store.pipeline_lock("nightly")
lock.acquire()
print("READY", flush=True)
time.sleep(3600)  # killed by the test; long enough for any loaded machine
"""


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


def _holders(conn: psycopg.Connection[tuple[object, ...]], pipeline: str) -> int:
    """Sessions holding the pipeline's advisory lock (the server's own view)."""
    key = lock_key(pipeline) & 0xFFFF_FFFF_FFFF_FFFF
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1",
        (key >> 32, key & 0xFFFF_FFFF),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _wait_unlocked(url: str, pipeline: str) -> None:
    """Until the server has ended the dead holder's session (a condition, not a delay)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(2400):
            if _holders(conn, pipeline) == 0:
                return
            conn.execute("SELECT pg_sleep(0.05)")
    raise AssertionError("the dead holder's lock was never released")


def test_a_second_client_is_refused_and_kill_9_frees_the_lock(pg_url: str) -> None:
    StateStore(pg_url).close()
    secret = pg_url.replace("postgres@", f"postgres:{PASSWORD}@")
    proc = start_child(HOLDER.format(url=secret))
    try:
        wait_ready(proc)
        with StateStore(secret) as store, pytest.raises(RunAborted) as info:
            store.pipeline_lock("nightly").acquire()
        text = str(info.value)
        assert f"pid {proc.pid} on host" in text and "started 20" in text
        assert "'nightly' is already running" in text and f"kill {proc.pid}" in text
        assert PASSWORD not in text and exit_code_for(info.value) == EXIT_ABORTED
        with StateStore(pg_url) as store, store.pipeline_lock("other"):
            pass  # another pipeline is independent
        with psycopg.connect(pg_url, autocommit=True) as conn:
            assert _holders(conn, "nightly") == 1
    finally:
        _kill(proc)  # kill -9: no chance to release
    _wait_unlocked(pg_url, "nightly")
    with StateStore(pg_url) as store, store.pipeline_lock("nightly") as lock:
        assert isinstance(lock, PgPipelineLock) and lock.held
        assert lock.taken_over is not None and lock.taken_over.pid == proc.pid
    with StateStore(pg_url) as store, store.pipeline_lock("nightly") as again:
        assert again.taken_over is None  # a clean release leaves no holder


def test_a_state_write_error_mid_run_names_the_server_not_the_password() -> None:
    from recordsync.run.guards import state_write_error
    from recordsync.state.pg import StateDbError

    url = PgUrl(f"postgresql://sync:{PASSWORD}@db.internal/recordsync")
    exc = StateDbError(f"server closed the connection (password {PASSWORD})")
    before = state_write_error(url, exc, sent=False)
    after = state_write_error(url, exc, sent=True)
    assert isinstance(before, ConfigError) and isinstance(after, RunAborted)
    for err in (before, after):
        text = str(err)
        assert PASSWORD not in text and "sync:**********@db.internal/recordsync" in text
        assert "PostgreSQL server runs" in text


def test_the_lock_and_the_writes_share_one_session(pg_url: str) -> None:
    """No write without the lock: a session that is cut loses both."""
    from recordsync.state.pg import StateDbError

    with StateStore(pg_url) as store, store.pipeline_lock("nightly"):
        with pytest.raises(RunAborted, match=f"pid {os.getpid()}"):
            store.pipeline_lock("nightly").acquire()  # the same session refuses too
        backend = store.connection.execute("SELECT pg_backend_pid()").fetchone()[0]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        _wait_unlocked(pg_url, "nightly")
        with pytest.raises(StateDbError):
            store.record_acknowledged("nightly", "m", "r", [("k", 1, "h", "created")])
        with StateStore(pg_url) as other, other.pipeline_lock("nightly"):
            pass  # free for the next run, on any worker


def test_passwords_checked_by_the_server(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that checks passwords (the session's, for a role of this test only: user
    postgres, which every other test uses, stays trusted, and the rules are put back): a
    wrong one is a ConfigError that does not quote it; PGPASSWORD serves a URL without one."""
    host = pg_server.split("host=", 1)[1].split("&", 1)[0]
    hba = Path(host) / "data" / "pg_hba.conf"
    trusting = hba.read_text()
    hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n")
    try:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE app LOGIN PASSWORD '{PASSWORD}'")
            admin.execute("CREATE DATABASE appdb OWNER app")
            admin.execute("SELECT pg_reload_conf()")
        rest = pg_server.split("?", 1)[1]
        wrong = "Wr0ng-pw-1234"
        with pytest.raises(ConfigError) as info:
            StateStore(f"postgresql://app:{wrong}@/appdb?{rest}")
        text = str(info.value)
        assert "password authentication failed" in text and wrong not in text
        assert "app:**********@/appdb" in text and exit_code_for(info.value) == EXIT_CONFIG
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
        with StateStore(f"postgresql://app@/appdb?{rest}") as store:  # no password in the URL
            store.record_acknowledged("p", "m", "r", [("k", 1, "h", "created")])
            assert store.get("p", "m", "k") is not None
    finally:
        hba.write_text(trusting)
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute("SELECT pg_reload_conf()")


def test_a_key_with_a_nul_is_a_state_database_error(pg: StateStore) -> None:
    """PostgreSQL text holds no NUL: a state error the run turns into exit 3 (docs)."""
    from recordsync.state.store import DB_ERRORS

    with pytest.raises(DB_ERRORS, match="NUL"):
        pg.record_acknowledged("p", "m", "r", [("a\x00b", 1, "h", "created")])
    assert pg.get("p", "m", "ab") is None

"""The state on a real PostgreSQL (``--state-db postgresql://...``): a nightly run and its
unchanged re-run (the snapshot, kept in the database, vouches for every row: nothing is
sent), and the crash-safety test: ``recordsync run`` killed with SIGKILL mid-run (the kill
matrix's deterministic kill point), then run again by "another worker" (a fresh process in
another directory, with no local state) that completes it with every row exactly once.
The URL carries a password (the test server trusts any): it must show nowhere."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.pg_support import PASSWORD, database_url, new_database

import recordsync.prepare.digests as prepare_digests
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state.location import PgUrl

from .support import KEY, REPO, all_records, served, target
from .test_kill_matrix_e2e import STALLED, one_row_a_chunk
from .test_settle_e2e import ROWS, source_rows, write_project
from .test_snapshot_e2e import _copy_project


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """A fresh database, its URL with a password that must never show."""
    return new_database(pg_server).replace("postgres@", f"postgres:{PASSWORD}@")


def _no_password_under(*roots: Path) -> None:
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                assert PASSWORD.encode() not in path.read_bytes(), path


def test_a_nightly_and_its_unchanged_rerun_with_the_state_on_postgres(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = _copy_project(tmp_path / "project")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # nothing of the state may land here

    def run(tag: str) -> Any:
        request = RunRequest(
            pipeline,
            report_dir=tmp_path / f"reports-{tag}",
            state_db=PgUrl(pg_url),
            retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        )
        with served(tmp_path / "sandbox.db") as url:
            return run_pipeline(request, target=target(url))

    first = run("1")
    assert first.summary["accounting_ok"]
    mapped: dict[str, int] = {}
    real = prepare_digests._blocks_of

    def counting(sb: Any, *args: Any) -> Any:
        blocks = list(real(sb, *args))
        mapped[Path(sb.file).name] = mapped.get(Path(sb.file).name, 0) + sum(map(len, blocks))
        return iter(blocks)

    monkeypatch.setattr(prepare_digests, "_blocks_of", counting)
    second = run("2")
    for step1, step2 in zip(first.summary["steps"], second.summary["steps"], strict=True):
        assert step2["rows_sent"] == step2["chunks"] == 0, step2  # nothing sent again
        assert step2["rows_unchanged"] == step1["created"] + step1["updated"], step2
    # the snapshots kept in PostgreSQL vouched for every row that ended ok: only the rest
    # (invalid rows of the sample) was mapped again
    for i, name in ((0, "companies.csv"), (1, "contacts.csv")):
        s = first.summary["steps"][i]
        assert mapped.get(name, 0) == s["rows_read"] - s["created"] - s["updated"], mapped
    assert list(work.iterdir()) == []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        blocks = conn.execute("SELECT count(*) FROM snapshot_blocks").fetchone()
    assert blocks is not None and blocks[0] >= 2
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err
    _no_password_under(tmp_path / "reports-1", tmp_path / "reports-2")


def chunk_states(url: str) -> dict[int, str]:
    """chunk number → state in the killed run's journal (empty before its tables exist)."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT chunk_no, state FROM chunks").fetchall()
    except psycopg.errors.UndefinedTable:
        return {}
    return {int(n): str(s) for n, s in rows}


def _run(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``recordsync run`` in a fresh process; its output to ``log`` (a pipe left unread
    could fill and stall it)."""
    cmd = [sys.executable, "-m", "recordsync", "run", *argv, "--quiet"]
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def test_kill_9_mid_run_then_another_worker_completes_it(tmp_path: Path, pg_url: str) -> None:
    pipeline = write_project(tmp_path, "email contacts")
    one_row_a_chunk(pipeline)
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY, "PYTHONPATH": str(REPO / "src")}
    one, two = tmp_path / "worker-1", tmp_path / "worker-2"
    one.mkdir()
    two.mkdir()
    db = tmp_path / "s.db"
    with served(db, [f"timeout-after-apply:every={STALLED}:path=/batch"]) as url:
        # worker 1: the state URL from the environment
        argv = [str(pipeline), "--base-url", url, "--report-dir", str(one / "reports")]
        proc = _run(argv, one, {**env, "RECORDSYNC_STATE_DB": pg_url}, tmp_path / "1.log")
        try:
            last = STALLED + 3  # journaled behind the stalled request, then it waits
            while last not in chunk_states(pg_url):
                assert proc.poll() is None, (tmp_path / "1.log").read_text()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.05)  # a pause between looks; the run's exit ends it early
            states = chunk_states(pg_url)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert states == {1: "acked", 2: "acked", 3: "begun", 4: "begun", 5: "queued", 6: "queued"}
    with served(db) as url:
        # worker 2: another process, another directory, no local state; --state-db
        argv = [str(pipeline), "--base-url", url, "--report-dir", str(two / "reports")]
        proc = _run([*argv, "--state-db", pg_url], two, env, tmp_path / "2.log")
        proc.wait()
        assert proc.returncode == 0, (tmp_path / "2.log").read_text()
        held = all_records(url, "contacts")
    # every source row exactly once, holding its values
    assert Counter(r["email"] for r in held) == Counter(
        r["Key"] for r in source_rows("email contacts")
    )
    assert len(held) == ROWS
    assert {r["email"]: r["name"] for r in held} == {
        r["Key"]: r["Name"] for r in source_rows("email contacts")
    }
    for log in ("1.log", "2.log"):
        assert PASSWORD not in (tmp_path / log).read_text()
    assert sorted(p.name for p in one.iterdir()) == ["reports"]  # no state on the workers
    assert sorted(p.name for p in two.iterdir()) == ["reports"]
    _no_password_under(one, two)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        runs = conn.execute("SELECT state, attempts FROM runs").fetchall()
    assert runs == [("finished", 2)]  # the second worker resumed the first one's run


def test_an_unreachable_state_database_is_exit_2_and_nothing_is_sent(
    tmp_path: Path,
    pg_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from recordsync.cli import main

    pipeline = write_project(tmp_path, "email contacts")
    monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
    missing = database_url(pg_server, "no_such_db", password=PASSWORD)
    with served(tmp_path / "s.db") as url:
        args = ["run", str(pipeline), "--base-url", url, "--state-db", missing]
        with pytest.raises(SystemExit) as info:
            main([*args, "--report-dir", str(tmp_path / "reports")])
        held = all_records(url, "contacts")
    out, err = capsys.readouterr()
    assert info.value.code == 2 and held == []
    assert "cannot connect to the PostgreSQL state database" in err and "no_such_db" in err
    assert PASSWORD not in out + err

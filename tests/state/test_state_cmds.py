"""``recordsync state show`` and ``state reset``, run through the real entry point."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psycopg
import pytest
from tests.pg_support import PASSWORD

from recordsync.cli import main
from recordsync.state import Journal, StateStore

from .conftest import start_child, wait_ready


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err  # a state URL's password never shows
    return int(info.value.code or 0), out, err


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The state, in an SQLite file or in PostgreSQL (its URL with a password that must
    never show: the test server trusts any)."""
    if request.param == "sqlite":
        path = str(tmp_path / ".recordsync" / "state.db")
    else:
        path = request.getfixturevalue("pg_url").replace("postgres@", f"postgres:{PASSWORD}@")
    with StateStore(path) as store:
        store.record_acknowledged(
            "nightly",
            "contacts",
            "r1",
            [("a", 1, "h", "created"), ("b", 2, "h", "updated"), ("c", None, None, "failed")],
        )
        store.record_acknowledged("nightly", "companies", "r1", [("acme.com", 3, "h", "created")])
        j = Journal(store, "nightly")
        j.start_run("r1")
        j.finish_run("r1")
        j.start_run("r2")
        j.begin_chunk("r2", "contacts", 1, 2, [(2, "d", "h")])
    return path


def test_show_text(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["state", "show", "pipelines/nightly.yaml", "--state-db", str(db)], capsys
    )
    assert code == 0
    assert "mapping contacts: 3 keys (created 1, failed 1, updated 1)" in out
    assert "mapping companies: 1 keys (created 1)" in out
    assert "incomplete run r2" in out and "1 chunk(s) in flight" in out
    assert "lock: not running" in out


def test_show_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["state", "show", "nightly", "--state-db", str(db), "--json"], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["mappings"]["contacts"] == {"created": 1, "updated": 1, "failed": 1}
    assert data["last_run"]["run_id"] == "r2"
    assert data["pending_chunks"] == [
        {"run_id": "r2", "step": "contacts", "chunk_no": 1, "rows": 1}
    ]


def test_show_without_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    code, out, _ = run_cli(["state", "show", "nightly", "--state-db", str(missing)], capsys)
    assert code == 0 and "no state database" in out
    assert not missing.exists()


def test_reset_one_mapping_with_yes(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["state", "reset", "nightly", "--mapping", "contacts", "--yes", "--state-db", str(db)]
    code, out, _ = run_cli(args, capsys)
    assert code == 0 and "forgot 3 ledger entries of mapping 'contacts'" in out
    with StateStore(db) as store:
        assert store.mappings("nightly") == ["companies"]


def test_reset_asks_and_aborts_on_no(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    code, out, err = run_cli(["state", "reset", "nightly", "--state-db", str(db)], capsys)
    assert "Aborted." in err
    assert code == 130 and "Forget 4 ledger entries of pipeline 'nightly'" in out
    with StateStore(db) as store:
        assert store.mappings("nightly") == ["companies", "contacts"]


def test_reset_whole_pipeline_drops_runs(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["state", "reset", "nightly", "-y", "--state-db", str(db)], capsys)
    assert code == 0 and "forgot 4 ledger entries" in out
    with StateStore(db) as store:
        assert store.mappings("nightly") == []
        assert Journal(store, "nightly").last_run() is None


def test_reset_refused_while_running(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code_text = (
        "import time\nfrom recordsync.state import StateStore\n"
        f"lock = StateStore({db!r}).pipeline_lock('nightly')\nlock.acquire()\n"
        "print('READY', flush=True)\ntime.sleep(3600)\n"  # killed by the test
    )
    proc = start_child(code_text)
    try:
        wait_ready(proc)
        code, _, err = run_cli(["state", "reset", "nightly", "-y", "--state-db", str(db)], capsys)
        _, shown, _ = run_cli(["state", "show", "nightly", "--state-db", str(db)], capsys)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert code == 3 and f"pid {proc.pid}" in err and "already running" in err
    assert f"lock: pipeline 'nightly' is already running (pid {proc.pid}" in shown
    with StateStore(db) as store:
        assert store.mappings("nightly") == ["companies", "contacts"]


def test_reset_unknown_mapping_is_a_usage_error(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["state", "reset", "nightly", "-m", "contcts", "-y", "--state-db", str(db)]
    code, _, err = run_cli(args, capsys)
    assert code == 2
    assert "no state for mapping 'contcts' (known: companies, contacts)" in err


def test_show_and_reset_without_state_on_postgres_create_nothing(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["state", "show", "nightly", "--state-db", pg_url], capsys)
    assert code == 0 and f"no state database at {pg_url}" in out
    code, out, _ = run_cli(["state", "reset", "nightly", "-y", "--state-db", pg_url], capsys)
    assert code == 0 and "nothing to reset" in out
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('state_meta')").fetchone() == (None,)

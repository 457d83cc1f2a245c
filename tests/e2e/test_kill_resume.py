"""kill -9 a real `recordsync run` mid-run, run it again: nothing sent twice, nothing missing.

The sandbox is served on loopback by this test process; the run is a subprocess. The
sandbox applies one batch and never answers it (``timeout-after-apply``), so the run is
stuck there however slow the machine. It is killed with SIGKILL at a condition the stuck run
reaches and then keeps, not at a moment raced against the client: mid-step, once the journal
holds the chunks the runner journals behind the stuck one (``sizes.CHUNKS_AHEAD``); on the
step's last chunk, once every chunk before it is acknowledged. The same sandbox is then
served again on its port without faults, and the run started again as a new subprocess: it
sends again the stuck chunk only (applied, so its rows come back ``updated``).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from recordsync.state import Journal, StateStore
from recordsync.tuning import sizes

from .support import KEY, all_records, served

ROWS = 3000
CHUNKS = 31
"""A canary chunk of 10 rows, then 30 of 100 (the last of 90)."""


def write_pipeline(tmp: Path, rows: int) -> Path:
    with open(tmp / "contacts.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["First", "Last", "Email", "Score"])
        for i in range(rows):
            w.writerow([f"Ann{i}", f"Lee{i}", f"ann.{i}@kill.example", i % 100])
    (tmp / "contacts.yaml").write_text(
        "object_type: contacts\n"
        "source: {path: contacts.csv}\n"
        'name: {template: "{First} {Last}"}\n'
        "match_by: [email]\n"
        "fields:\n  email: Email\n  lead_score: Score\n",
        encoding="utf-8",
    )
    pipeline = tmp / "killme.yaml"
    pipeline.write_text(
        "name: killme\nsteps: [contacts.yaml]\nsend: {chunk_size: 100, canary_chunk_size: 10}\n",
        encoding="utf-8",
    )
    return pipeline


def command(pipeline: Path, url: str, tmp: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "recordsync",
        "run",
        str(pipeline),
        "--base-url",
        url,
        "--state-db",
        str(tmp / "state" / "state.db"),
        "--report-dir",
        str(tmp / "reports"),
        "--quiet",
    ]


def chunk_states(db: Path) -> dict[int, str]:
    """chunk number → state in the run's journal (empty while it is not readable)."""
    if not db.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute("SELECT chunk_no, state FROM chunks").fetchall()
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet, or being written
        return {}
    return {int(n): str(s) for n, s in rows}


def acked_chunks(db: Path) -> int:
    """Chunks the run's journal holds acknowledged."""
    return sum(s == "acked" for s in chunk_states(db).values())


def behind_journaled(states: dict[int, str]) -> bool:
    """Mid-step: the chunks the runner journals behind the stuck one are journaled (the begin
    of the last acknowledges the chunk before the stuck one)."""
    return 8 + sizes.CHUNKS_AHEAD in states


def all_before_acked(states: dict[int, str]) -> bool:
    """On the last chunk, no chunk follows: the answer collected before the runner waits on
    the stuck one is acknowledged before that wait."""
    return sum(s == "acked" for s in states.values()) == CHUNKS - 1


STUCK: dict[str, tuple[int, Callable[[dict[int, str]], bool]]] = {
    # the stuck chunk, and the condition the stuck run reaches once it journaled all it will
    "mid-step": (8, behind_journaled),
    "last chunk": (CHUNKS, all_before_acked),
}


@pytest.mark.parametrize("where", list(STUCK))
def test_kill_9_mid_run_then_resume_sends_nothing_twice(tmp_path: Path, where: str) -> None:
    stuck, reached = STUCK[where]
    pipeline = write_pipeline(tmp_path, ROWS)
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY}
    db = tmp_path / "state" / "state.db"
    hang = [f"timeout-after-apply:path=/batch:after={stuck - 1}"]
    with served(tmp_path / "sandbox.db", hang) as url:
        first = subprocess.Popen(
            command(pipeline, url, tmp_path),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 300  # a guard against a hang, not a bound to meet
            while not reached(chunk_states(db)):
                assert first.poll() is None, f"the run ended ({first.returncode}) before its kill"
                assert time.monotonic() < deadline, f"never reached: {chunk_states(db)}"
                with contextlib.suppress(subprocess.TimeoutExpired):
                    first.wait(0.05)  # a pause between looks; the run's exit ends it early
            states = chunk_states(db)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(60)
        assert first.returncode == -signal.SIGKILL
    # every chunk answered before the stuck one is acknowledged; the stuck one was written;
    # the one behind it may be cleared (never written: the sender was stuck); the rest queued
    assert all(states[n] == "acked" for n in range(1, stuck))
    assert states[stuck] == "begun"
    assert all(states[n] == "queued" for n in states if n > stuck + 1)

    with served(tmp_path / "sandbox.db") as again:  # the same sandbox, on its port
        assert again == url
        second = subprocess.run(
            command(pipeline, url, tmp_path),
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert second.returncode == 0, second.stderr
        held = all_records(url, "contacts")

    report_line = [ln for ln in second.stderr.splitlines() if ln.startswith("report: ")][-1]
    report_dir = Path(report_line.removeprefix("report: "))
    summary = json.loads((report_dir / "summary.json").read_text(encoding="utf-8"))
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as f:
        lines = list(csv.DictReader(f))

    # the report accounts for every source row exactly once
    assert summary["accounting_ok"], summary["accounting_errors"]
    t = summary["totals"]
    assert t["rows_read"] == ROWS and t["created"] + t["updated"] == ROWS
    assert len(lines) == ROWS
    assert sorted(int(r["source_row"]) for r in lines) == list(range(2, ROWS + 2))
    assert {r["status"] for r in lines} <= {"created", "updated"}
    # the resumed run is the killed run (same id, second attempt) and it is finished
    with StateStore(db) as store:
        run = Journal(store, "killme").run(summary["run_id"])
        assert run is not None and (run.state, run.attempts) == ("finished", 2)
    assert report_dir.with_name(f"{summary['run_id']}.partial-1").is_dir()
    # acknowledged chunks were not sent again: only the stuck chunk was, applied by the
    # sandbox (its 100 rows come back updated); the chunks behind it were never written
    stuck_rows = 90 if stuck == CHUNKS else 100
    assert t["updated"] == stuck_rows and t["created"] == ROWS - stuck_rows
    # the sandbox holds exactly one record per source key: no duplicate, none missing
    emails = Counter(r["email"] for r in held)
    assert len(held) == ROWS and max(emails.values()) == 1
    assert set(emails) == {f"ann.{i}@kill.example" for i in range(ROWS)}

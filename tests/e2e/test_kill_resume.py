"""kill -9 a real `recordsync run` mid-run, run it again: nothing sent twice, nothing missing.

The sandbox is served on loopback by this test process; the run is a subprocess. The
sandbox applies the run's 8th batch and never answers it (``timeout-after-apply``), so the
run cannot end however slow the machine: it is killed with SIGKILL once its journal shows
acknowledged chunks, with that chunk applied and unacknowledged. The same sandbox is then
served again on its port without faults, and the run started again as a new subprocess.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from recordsync.state import Journal, StateStore

from .support import KEY, all_records, served

ROWS = 3000
HANG_AFTER = 7
"""The sandbox applies the batch after this many and never answers it."""


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


def acked_chunks(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(
                conn.execute("SELECT count(*) FROM chunks WHERE state = 'acked'").fetchone()[0]
            )
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet, or busy
        return 0


def test_kill_9_mid_run_then_resume_sends_nothing_twice(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, ROWS)
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY}
    db = tmp_path / "state" / "state.db"
    hang = [f"timeout-after-apply:path=/batch:after={HANG_AFTER}"]
    with served(tmp_path / "sandbox.db", hang) as url:
        first = subprocess.Popen(
            command(pipeline, url, tmp_path),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 300  # a guard against a hang, not a bound to meet
        while acked_chunks(db) < 5 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.poll() is None, "the run ended before it could be killed"
        first.send_signal(signal.SIGKILL)
        first.wait(60)
        assert first.returncode == -signal.SIGKILL
        assert first.stderr is not None
        first.stderr.close()
        acked_before = acked_chunks(db)
        assert 5 <= acked_before <= HANG_AFTER  # killed midway

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
    # acknowledged chunks were not sent again: only the chunk in flight at the kill was (one
    # at most: a chunk is journaled in the transaction that acknowledges the previous one)
    assert t["updated"] <= 100
    # the sandbox holds exactly one record per source key: no duplicate, none missing
    emails = Counter(r["email"] for r in held)
    assert len(held) == ROWS and max(emails.values()) == 1
    assert set(emails) == {f"ann.{i}@kill.example" for i in range(ROWS)}

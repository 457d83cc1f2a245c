"""Ctrl-C (SIGINT) during a real `recordsync run`: it says where what it did is and that the
next run resumes; the next run does resume (nothing sent twice, nothing missing).

As in test_kill_resume: the sandbox is served by this test process with added latency, the
run is a subprocess, interrupted once its journal shows acknowledged chunks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from recordsync.state import Journal, StateStore

from .support import KEY, all_records, served
from .test_kill_resume import acked_chunks, command, write_pipeline

ROWS = 2000


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_where_and_that_the_next_run_resumes_and_it_does(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, ROWS)
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY}
    db = tmp_path / "state" / "state.db"
    # past the fourth batch, each answer takes 0.4 s more: when the third chunk is
    # acknowledged, seconds of sending are left for the signal to land in (on a loaded
    # machine too); the resumed run is served without them
    slow = ["latency:40ms:path=/batch", "latency:400ms:path=/batch:after=4"]
    with served(tmp_path / "sandbox.db", slow) as url:
        first = subprocess.Popen(
            command(pipeline, url, tmp_path),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # as from a terminal: a child inherits an ignored SIGINT (some test or library of
            # this process may have set it), and Python then never raises KeyboardInterrupt
            preexec_fn=_default_sigint,
        )
        deadline = time.monotonic() + 300  # a guard against a hang, not a bound to meet
        while acked_chunks(db) < 3 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.poll() is None, "the run ended before it could be interrupted"
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 130, err
        (partial,) = (tmp_path / "reports").iterdir()
        results = partial / "results.csv"
        assert err.splitlines()[-1] == (
            f"interrupted: no report was written; what it did so far is in {results}. Run it"
            " again: the next run resumes this one (chunks the service acknowledged are not"
            " sent again)."
        )
        assert results.is_file() and not (partial / "report.md").exists()

    # the same sandbox, on its port, without the latency: the resumed run need not be slow
    with served(tmp_path / "sandbox.db") as again:
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

    assert second.stderr.splitlines()[-1].startswith(f"all {ROWS:,} rows ok: ")
    summary = json.loads((partial / "summary.json").read_text(encoding="utf-8"))
    assert partial.with_name(f"{partial.name}.partial-1").is_dir()  # the interrupted attempt's
    assert summary["accounting_ok"] and summary["totals"]["rows_read"] == ROWS
    with StateStore(db) as store:
        run = Journal(store, "killme").run(summary["run_id"])
        assert run is not None and (run.state, run.attempts) == ("finished", 2)
    assert summary["totals"]["updated"] <= 100  # at most the chunk in flight was sent again
    emails = Counter(r["email"] for r in held)
    assert len(held) == ROWS and max(emails.values()) == 1

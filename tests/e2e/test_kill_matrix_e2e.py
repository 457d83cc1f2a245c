"""The kill -9 column of the fault matrix (test_settle_e2e.py holds the lost answers): for each
shape of mapping, a real ``recordsync run`` is killed with SIGKILL mid-run, then the next run
resumes it, then ``retry`` and a plain rerun: every source row ends with exactly one record of
its own holding its values, or an honest non-ok outcome and a non-zero exit.

The kill point is deterministic, with no sleep racing the client: the sandbox applies the
third batch request and then never answers it (``timeout-after-apply``), so the client's
sender is stuck on it while its main thread journals the chunks behind it and then waits.
The test waits until the journal holds the sixth chunk (the last the runner journals before
waiting: ``sizes.CHUNKS_AHEAD`` chunks behind the one in flight) and kills the run there. The
journal is then always the same: chunks 1-2 acknowledged, 3 written (in flight) and 4 cleared to
be sent (``begun``), 5-6 journaled but never cleared (``queued``): their requests were never
written, so the resumed run sends them as new rows instead of holding them in doubt.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from recordsync.run.pipeline import run_pipeline
from recordsync.run.retry import retry_report

from .support import KEY, REPO, all_records, served, target
from .test_settle_e2e import SHAPES, check, check_retry, request, source_rows, write_project

STALLED = 3
"""The batch request the sandbox applies and never answers (one row a chunk)."""
UNSAFE = ("ledger-only", "no key")
"""Shapes whose rows could create a second record if resent blind (held in doubt)."""


def later_resume(report_dir: Path) -> None:
    """Date the resumed attempt's start an hour later in its summary.json, as when a killed
    nightly is resumed by the next night's run (the run id still dates the first attempt)."""
    path = report_dir / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    started = datetime.fromisoformat(summary["started_at"]) + timedelta(hours=1)
    summary["started_at"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(summary), encoding="utf-8")


def chunk_states(db: Path) -> dict[int, str]:
    """chunk number → state in the killed run's journal (empty while it is not readable)."""
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


def kill_mid_run(tmp_path: Path, pipeline: Path, url: str) -> dict[int, str]:
    """Start the run, wait until it is stuck behind the stalled request with every chunk it
    will journal journaled, kill -9 it; the journal's chunk states at the kill."""
    db = tmp_path / "state.db"
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY, "PYTHONPATH": str(REPO / "src")}
    argv = [sys.executable, "-m", "recordsync", "run", str(pipeline), "--base-url", url]
    argv += ["--state-db", str(db), "--report-dir", str(tmp_path / "reports-1"), "--quiet"]
    proc = subprocess.Popen(
        argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        last = STALLED + 3
        # a condition the stuck run reaches and then keeps: not a race with the client
        while last not in chunk_states(db):
            assert proc.poll() is None, f"the run ended ({proc.returncode}) before its kill"
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.05)  # a pause between looks; the run's exit ends it early
        return chunk_states(db)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def one_row_a_chunk(pipeline: Path) -> None:
    pipeline.write_text(
        "name: shape\nsteps:\n  - m.yaml\nsend:\n  chunk_size: 1\n  canary_chunk_size: 1\n"
    )


@pytest.mark.parametrize("shape", list(SHAPES))
def test_kill_9_mid_run_then_resume_retry_and_rerun(tmp_path: Path, shape: str) -> None:
    object_type = SHAPES[shape][0]
    pipeline = write_project(tmp_path, shape)
    one_row_a_chunk(pipeline)
    db = tmp_path / "s.db"
    with served(db, [f"timeout-after-apply:every={STALLED}:path=/batch"]) as url:
        states = kill_mid_run(tmp_path, pipeline, url)
    # chunks behind the one in flight were never written: queued, not cleared to be sent
    assert states == {1: "acked", 2: "acked", 3: "begun", 4: "begun", 5: "queued", 6: "queued"}
    with served(db) as url:
        resumed = run_pipeline(request(tmp_path, pipeline, "2"), target=target(url))
        assert resumed.error is None, resumed.error
        not_ok = check(resumed, shape, all_records(url, object_type))
        in_doubt = resumed.summary["totals"]["in_doubt"]
        # only the chunk in flight and the one cleared behind it may have been sent
        assert (not_ok, in_doubt) == ((2, 2) if shape in UNSAFE else (0, 0))
        if resumed.exit_code != 0:
            # the resume came an hour after the kill (a nightly's next night): its started_at
            # is later than the killed attempt's writes, which retry must still read back
            later_resume(resumed.report_dir)
            retried = retry_report(
                resumed.report_dir, request(tmp_path, pipeline, "3"), target=target(url)
            )
            assert retried.error is None and retried.exit_code == 0
            check_retry(retried, shape, all_records(url, object_type))
        if shape == "no key":  # a plain rerun creates every row again: not this test's matter
            return
        again = run_pipeline(request(tmp_path, pipeline, "4"), target=target(url))
        held = all_records(url, object_type)
    assert check(again, shape, held) == 0
    assert Counter(r["name"] for r in held) == Counter(r["Name"] for r in source_rows(shape))


def test_no_request_is_written_before_its_chunk_is_cleared_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes ``queued`` mean "never written": when the sender takes a chunk, the
    committed journal already holds it ``begun``, whatever the interleaving."""
    from recordsync.send.sender import ChunkSender

    pipeline = write_project(tmp_path, "no key")
    one_row_a_chunk(pipeline)
    seen: list[tuple[int, str | None]] = []
    real = ChunkSender.send

    def send(self: ChunkSender, chunk_id: str, *args: object, **kwargs: object) -> object:
        number = int(chunk_id.rsplit("#", 1)[1])
        seen.append((number, chunk_states(tmp_path / "state.db").get(number)))
        return real(self, chunk_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ChunkSender, "send", send)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline, "1"), target=target(url))
    assert result.exit_code == 0
    assert seen == [(n, "begun") for n in range(1, 13)]

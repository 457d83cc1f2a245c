"""The pipeline lock: refusal while a live process holds it, take-over after kill -9."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from recordsync.core.errors import EXIT_ABORTED, RunAborted, exit_code_for
from recordsync.state import PipelineLock, lock_path

from .conftest import start_child, wait_ready

HOLDER = """
import time
from recordsync.state import PipelineLock
lock = PipelineLock({state_dir!r}, "nightly")
lock.acquire()
print("READY", flush=True)
time.sleep(120)
"""


def _stop(proc: object) -> None:
    import subprocess

    assert isinstance(proc, subprocess.Popen)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]


def test_lock_held_by_live_process_refuses(tmp_path: Path) -> None:
    proc = start_child(HOLDER.format(state_dir=str(tmp_path)))
    try:
        wait_ready(proc)
        with pytest.raises(RunAborted) as info:
            PipelineLock(tmp_path, "nightly").acquire()
        message = str(info.value)
        assert f"pid {proc.pid}" in message
        assert "already running" in message and "'nightly'" in message
        assert str(lock_path(tmp_path, "nightly")) in message
        assert f"kill {proc.pid}" in message  # what to do
        assert "started 20" in message  # the start time
        assert exit_code_for(info.value) == EXIT_ABORTED
        # another pipeline is independent
        with PipelineLock(tmp_path, "other"):
            pass
    finally:
        _stop(proc)


def test_lock_of_killed_process_is_taken_over(tmp_path: Path) -> None:
    proc = start_child(HOLDER.format(state_dir=str(tmp_path)))
    try:
        wait_ready(proc)
    finally:
        _stop(proc)  # kill -9: no chance to release
    assert lock_path(tmp_path, "nightly").read_text()  # the stale file is still there
    with PipelineLock(tmp_path, "nightly") as lock:
        assert lock.held
        assert lock.taken_over is not None and lock.taken_over.pid == proc.pid
        assert f'"pid": {os.getpid()}' in lock.path.read_text()


def test_clean_release_leaves_no_holder(tmp_path: Path) -> None:
    with PipelineLock(tmp_path, "nightly") as lock:
        path = lock.path
    assert path.read_text() == ""
    with PipelineLock(tmp_path, "nightly") as again:
        assert again.taken_over is None


def test_second_lock_in_same_process_also_refuses(tmp_path: Path) -> None:
    with PipelineLock(tmp_path, "nightly"), pytest.raises(RunAborted, match=f"pid {os.getpid()}"):
        PipelineLock(tmp_path, "nightly").acquire()


def test_pipeline_names_become_safe_file_names(tmp_path: Path) -> None:
    assert lock_path(tmp_path, "../etc/passwd").parent == tmp_path / "locks"


RUN_HOLDER = """
import time
from recordsync.state import PipelineLock, StateStore
store = StateStore({db!r})
lock = PipelineLock({state_dir!r}, "nightly", {db!r})
lock.acquire()
print("READY", flush=True)
time.sleep(120)
"""


def test_a_lock_file_deleted_mid_run_does_not_let_a_second_run_in(tmp_path: Path) -> None:
    db = tmp_path / "custom.db"
    proc = start_child(RUN_HOLDER.format(db=str(db), state_dir=str(tmp_path)))
    try:
        wait_ready(proc)
        lock_path(tmp_path, "nightly").unlink()  # a cleanup job removes the live run's lock file
        with pytest.raises(RunAborted) as info:
            PipelineLock(tmp_path, "nightly", db).acquire()
        text = str(info.value)
        assert "'nightly' is already running" in text and str(db) in text
        assert "deleted or replaced while it ran" in text
        assert exit_code_for(info.value) == EXIT_ABORTED
        with PipelineLock(tmp_path, "other", db):  # another pipeline of the database runs
            pass
    finally:
        _stop(proc)
    with PipelineLock(tmp_path, "nightly", db) as lock:  # the holder died: free again
        assert lock.held


def test_the_database_lock_is_released_with_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.write_bytes(b"")
    with PipelineLock(tmp_path, "nightly"):
        pass
    proc = start_child(RUN_HOLDER.format(db=str(db), state_dir=str(tmp_path)))
    try:
        wait_ready(proc)  # the child took both locks after this process released them
    finally:
        _stop(proc)

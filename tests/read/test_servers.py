"""The PostgreSQL server the tests start stops itself when the process that started it is
killed (SIGKILL: a test run's time-out, a developer's kill), and its directory goes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .servers import _pg_bindir, unavailable

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.read.servers import postgres_server
with postgres_server() as url:
    print(url, flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_server_whose_starter_is_killed_stops_and_its_directory_goes() -> None:
    if _pg_bindir() is None:
        unavailable("PostgreSQL is not installed (apt-get install postgresql)")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(REPO)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("postgresql://"), url
        root = Path(url.split("host=")[1].split("&")[0])
        pid = int((root / "data" / "postmaster.pid").read_text().split()[0])
        assert _alive(pid)
    finally:
        child.send_signal(signal.SIGKILL)  # no finally of the child's runs
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    deadline = time.monotonic() + 120  # a guard against a server left running, not a bound
    while _alive(pid) or root.exists():
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGQUIT)  # leave nothing behind, then fail
            shutil.rmtree(root, ignore_errors=True)
            pytest.fail(f"the server (pid {pid}) outlived its starter; {root} is still there")
        time.sleep(0.1)

"""Real servers for source tests, started by the tests and stopped at the end: PostgreSQL
from Debian's packages (initdb + pg_ctl on a temporary directory, a unix socket only) and
moto's S3 server on 127.0.0.1. Missing software skips a test, except under CI (env CI=true),
where it fails: CI must run these tests (.ci/run installs PostgreSQL)."""

from __future__ import annotations

import glob
import logging
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def unavailable(why: str) -> None:
    """Skip, or fail under CI: a test that needs this server never skips in CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{why} (CI must run this test: .ci/run installs what it needs)")
    pytest.skip(why)


def _pg_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[4]))
    return Path(dirs[-1]) if dirs and Path(dirs[-1], "initdb").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL cluster listening on a unix socket only; yields a connection
    string (database ``postgres``, user ``postgres``, trust authentication)."""
    bindir = _pg_bindir()
    if bindir is None:
        unavailable("PostgreSQL is not installed (apt-get install postgresql)")
        raise AssertionError  # unreachable
    root = Path(tempfile.mkdtemp(prefix="recordsync-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        if shutil.which("runuser") is None:
            unavailable("running as root without runuser: cannot start PostgreSQL")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    data, sock = root / "data", root
    port = _free_port()  # names the socket file; nothing listens on TCP
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        initdb += ["--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]
        subprocess.run([*as_user, *initdb], check=True, capture_output=True, timeout=300)
        opts = f"-c listen_addresses='' -k {sock} -p {port} -c fsync=off"
        start = [str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-w", "-t", "300"]
        start += ["-l", str(root / "log"), "start"]
        subprocess.run([*as_user, *start], check=True, capture_output=True, timeout=300)
    except subprocess.CalledProcessError as exc:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr!r} {log}") from None
    stop = [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
    watchdog = _watchdog(stop, root)
    try:
        yield f"postgresql://postgres@/postgres?host={sock}&port={port}"
    finally:
        subprocess.run(stop, capture_output=True, timeout=300)
        shutil.rmtree(root, ignore_errors=True)
        watchdog.kill()
        watchdog.wait()


_WATCH = 'p=$1; d=$2; shift 2; while kill -0 "$p" 2>/dev/null; do sleep 1; done; "$@"; rm -rf "$d"'
"""Waits for the process ``$1`` to end, then runs the rest of its arguments and removes the
directory ``$2``."""


def _watchdog(stop: list[str], root: Path) -> subprocess.Popen[bytes]:
    """A process of its own session that stops the server (``stop``) and removes ``root``
    once this process ends without doing so itself: a test run killed with SIGKILL, or its
    whole process group killed by a time-out, leaves no server running."""
    return subprocess.Popen(
        ["sh", "-c", _WATCH, "recordsync-pg-watchdog", str(os.getpid()), str(root), *stop],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3-compatible server on 127.0.0.1 and a free port; yields its endpoint URL."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        unavailable("moto[server] is not installed (pip install -e '.[dev]')")
        raise AssertionError from None  # unreachable
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()

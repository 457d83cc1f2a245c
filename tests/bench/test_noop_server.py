"""bench/noop_server.py: checks batches as the service interface says, answers each entry
``created``, counts what arrived; a real recordsync run against it arrives exactly once."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest
from tests.bench.support import load

from recordsync.cli import main

KEY = "sk_live_noop_tests_0123456789"


@pytest.fixture(scope="module")
def meta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    noop = load("noop_server")
    path: Path = noop.write_meta(tmp_path_factory.mktemp("noop") / "meta.json")
    return path


def test_a_recordsync_run_arrives_exactly_once(
    meta: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    noop, project, arrivals = load("noop_server"), load("project"), load("arrivals")
    pipeline = project.make_project(tmp_path, 250)
    emails = arrivals.source_emails(pipeline)
    monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
    with noop.noop_server(meta, KEY) as url:
        args = ["run", str(pipeline), "--base-url", url, "--quiet"]
        args += ["--state-db", str(tmp_path / "s.db"), "--report-dir", str(tmp_path / "r")]
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 0
        counts = noop.counts(url)
        arrivals.check_noop(url, emails, "run")  # passes: each e-mail once
        # the same rows once more: every identity now arrived twice, and the check says so
        with pytest.raises(SystemExit):
            main([*args[:-4], "--no-state", "--report-dir", str(tmp_path / "r2")])
        with pytest.raises(arrivals.ArrivalError, match="250 more than once"):
            arrivals.check_noop(url, emails, "run")
    assert counts["entries"] == {"contacts": 250} and counts["distinct"] == {"contacts": 250}
    # besides the batches: one list read at the end, the mark the next run checks the target
    # against (docs/state.md, "What a nightly run checks in the target")
    assert counts["failed"] == {} and counts["other"] == {"GET /api/objects/contacts": 1}
    assert counts["requests"] == 3  # chunks of 100


def test_batches_are_checked_and_answered(meta: Path) -> None:
    noop = load("noop_server")
    with noop.noop_server(meta, KEY) as url, httpx.Client(base_url=url) as c:
        path = "/api/objects/contacts/batch"
        entry = {"name": "Ada", "match_by": "email", "match_value": "ada@x.example"}
        assert c.post(path, json={"objects": [entry]}).status_code == 401
        h = {"x-api-key": KEY}
        assert c.post("/api/objects/nope/batch", json={"objects": []}, headers=h).status_code == 404
        missing = c.post(path, json={"rows": []}, headers=h)
        assert missing.status_code == 400 and "objects" in missing.json()["error"]
        big = c.post(path, json={"objects": [entry] * 101}, headers=h)
        assert big.status_code == 400 and "Received 101 objects" in big.json()["error"]
        answer = c.post(path, json={"objects": [entry, {"fields": {}}, entry]}, headers=h).json()
        assert [r["status"] for r in answer["results"]] == ["created", "failed", "created"]
        ids = [r["id"] for r in answer["results"]]
        assert ids[1] is None and ids[0] != ids[2]
        assert answer["summary"] == {"total": 3, "created": 2, "updated": 0, "failed": 1}
        assert c.get("/api/meta/users", headers=h).json()["data"]
        c.get("/api/objects/contacts", headers=h)  # not served: counted as "other"
        counts = c.get("/_counts", params={"identities": "1"}).json()
    assert counts["entries"] == {"contacts": 3} and counts["failed"] == {"contacts": 1}
    assert counts["identities"] == {"contacts": {"email:ada@x.example": 2}}
    assert counts["other"] == {"GET /api/objects/contacts": 1}
    # the connection it answered /_counts on (the client's one keep-alive connection) skips
    # Nagle: the benchmarks stop on anything else (bench/plausible.py)
    assert counts["nodelay"] == [1]
    assert json.loads(meta.read_text())["schema"]


def test_the_listening_socket_says_tcp_and_its_connections_skip_nagle() -> None:
    """Without TCP_NODELAY on the accepted connections every keep-alive answer waited for the
    client's delayed ACK (~40 ms here) under asyncio's own loop: asyncio sets the option only
    on accepted sockets whose proto says TCP, so the listener must say it (and Linux passes
    the option itself on to what the listener accepts)."""
    noop = load("noop_server")
    listener = noop.listening_socket()
    with listener:
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.getsockname()[0] == "127.0.0.1"
        listener.listen(1)
        with socket.create_connection(listener.getsockname()) as client:
            accepted, _ = listener.accept()
            with accepted:
                assert client.fileno() >= 0
                assert accepted.proto == socket.IPPROTO_TCP
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_asking_for_the_connections_options_keeps_no_file_open() -> None:
    """Each ``/_counts`` reads the connections' options through ``/proc/self/fd``: a file that
    is no socket was kept open by each call (their number doubled a call, until the server
    could open no more)."""
    import os

    noop = load("noop_server")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(12):
        noop.connections_nodelay(1)
    assert len(os.listdir("/proc/self/fd")) == before

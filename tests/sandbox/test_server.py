"""Over a real loopback socket: run_in_thread, keep-alive clients, data kept across restarts."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

from .support import KEY, H


def test_serves_on_a_free_loopback_port_and_stops(tmp_path: Path) -> None:
    app = create_app(tmp_path / "s.db", api_key=KEY)
    with run_in_thread(app) as base:
        assert base.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=base, headers=H) as http:
            r = http.get("/api/meta/users")
            assert r.status_code == 200 and len(r.json()["data"]) == 4
            r = http.post(
                "/api/objects/contacts/batch",
                json={"objects": [{"name": f"C{i}"} for i in range(100)]},
            )
            assert r.json()["summary"]["created"] == 100
            assert httpx.get(base + "/api/meta/users").status_code == 401
    try:
        httpx.get(base + "/openapi.json", timeout=1)
    except httpx.TransportError:
        pass
    else:  # pragma: no cover - the server should be gone
        raise AssertionError("the server still answers after the context exited")


def test_restart_finds_the_data_again(tmp_path: Path) -> None:
    db = tmp_path / "persist" / "sandbox.db"
    first = create_app(db, api_key=KEY)
    with run_in_thread(first) as base, httpx.Client(base_url=base, headers=H) as http:
        rec = http.put(
            "/api/objects/contacts", json={"name": "Ada", "fields": {"email": "ada@x.example"}}
        ).json()["data"]
        gone = http.put("/api/objects/contacts", json={"name": "Gone"}).json()["data"]
        http.request("DELETE", "/api/objects/contacts", json={"id": gone["id"]})
    first.state.store.close()
    second = create_app(db, api_key=KEY)
    with run_in_thread(second) as base, httpx.Client(base_url=base, headers=H) as http:
        assert http.get(f"/api/objects/contacts?id={rec['id']}").json() == {"data": rec}
        assert http.get(f"/api/objects/contacts?id={gone['id']}").status_code == 404
        again = http.post(
            "/api/objects/contacts/batch",
            json={
                "objects": [{"name": "Ada", "fields": {"email": "ADA@x.example"}}, {"name": "New"}]
            },
        ).json()
        assert again["results"][0] == {"id": rec["id"], "status": "updated"}
        assert again["results"][1]["id"] > gone["id"]  # ids are never reused
    second.state.store.close()


def test_concurrent_batches_never_duplicate_contacts(tmp_path: Path) -> None:
    app = create_app(tmp_path / "c.db", api_key=KEY)
    objects = [
        {"name": f"P{i}", "match_by": "email", "match_value": f"p{i}@x.example"} for i in range(50)
    ]

    def send(base: str) -> list[str]:
        with httpx.Client(base_url=base, headers=H) as http:
            r = http.post("/api/objects/contacts/batch", json={"objects": objects})
            return [x["status"] for x in r.json()["results"]]

    with run_in_thread(app) as base, ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(send, [base] * 4))
        with httpx.Client(base_url=base, headers=H) as http:
            total = http.get("/api/objects/contacts").json()["pagination"]["total"]
    assert total == 50
    assert sorted(outcomes) == [["created"] * 50] + [["updated"] * 50] * 3
    app.state.store.close()


def test_server_logs_never_show_the_key(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    app = create_app(tmp_path / "l.db", api_key=KEY)
    with run_in_thread(app) as base, httpx.Client(base_url=base) as http:
        http.get("/api/meta/users", headers=H)
        http.get("/api/meta/users", headers={"x-api-key": "sk_live_wrong_key"})
        http.get("/nowhere", headers=H)
    assert KEY not in caplog.text and "sk_live_wrong_key" not in caplog.text
    app.state.store.close()


def test_a_request_in_flight_when_the_server_stops_still_gets_its_answer() -> None:
    """Stopping waits for the answer being written (and then for nothing else)."""
    arrived, release = threading.Event(), threading.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        arrived.set()
        while not release.is_set():  # released once the server has stopped listening
            await asyncio.sleep(0.001)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"answered"})

    def release_once_closed(port: int) -> None:
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) != 0:
                    break
            time.sleep(0.001)
        release.set()

    with ThreadPoolExecutor(2) as pool:
        with run_in_thread(slow) as base:
            answer = pool.submit(httpx.get, base + "/slow", timeout=60)
            assert arrived.wait(60)
            pool.submit(release_once_closed, int(base.rsplit(":", 1)[1]))
        assert release.is_set()  # the context left only after the answer was released
        r = answer.result(timeout=60)
    assert (r.status_code, r.text) == (200, "answered")

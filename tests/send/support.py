"""Helpers of the send tests: an in-process sandbox, a client with a recorded sleep, fakes."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from recordsync.core.secret import Secret
from recordsync.sandbox import create_app
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryPolicy

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette warns at import when run on httpx
    from starlette.testclient import TestClient

KEY = "sk_live_send_tests_0123456789abcdef"
BASE = "http://testserver"


class Sleeps(list[float]):
    """A sleep function that records instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def policy(sleeps: Sleeps | None = None, **kw: Any) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps if sleeps is not None else Sleeps(), clock=lambda: 1e9, **kw)


@contextmanager
def sandbox_client(tmp_path: Path, **kw: Any) -> Iterator[tuple[RecordServiceClient, Any]]:
    """A RecordServiceClient talking to a fresh in-process sandbox (no socket)."""
    app = create_app(
        tmp_path / "sandbox.db",
        api_key=KEY,
        faults=kw.pop("faults", None),
        quirks=kw.pop("quirks", None),
    )
    try:
        with TestClient(app, base_url=BASE) as http:
            yield RecordServiceClient(http, BASE, Secret(KEY), retry=policy(**kw)), app
    finally:
        app.state.store.close()


def people_project(root: Path, rows: int, *, name: str, send: dict[str, int] | None = None) -> None:
    """A one-step pipeline ``run.yaml`` in ``root`` (reports in ``reports/``): ``rows``
    contacts from ``people.csv`` (a name and an e-mail each); ``send``: its ``send:`` options."""
    pipeline = [f"name: {name}", "steps:", "  - people.yaml"]
    pipeline += ["send:", *(f"  {k}: {v}" for k, v in send.items())] if send else []
    pipeline += ["report:", "  directory: reports", ""]
    (root / "run.yaml").write_text("\n".join(pipeline), encoding="utf-8")
    (root / "people.yaml").write_text(
        "object_type: contacts\nsource:\n  path: people.csv\nname:\n  template: \"{Name}\"\n"
        "match_by: [email]\nfields:\n  email: Email\n",
        encoding="utf-8",
    )
    people = "".join(f"Person {i},p{i}@x.example\n" for i in range(rows))
    (root / "people.csv").write_text("Name,Email\n" + people, encoding="utf-8")


Handler = Callable[[httpx.Request], httpx.Response]


def fake_client(handler: Handler, sleeps: Sleeps | None = None, **kw: Any) -> RecordServiceClient:
    """A client whose every request goes to ``handler`` (for what the sandbox cannot do)."""
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return RecordServiceClient(http, "https://crm.example", Secret(KEY), retry=policy(sleeps, **kw))


def ok_batch(request: httpx.Request, start_id: int = 1, status: str = "created") -> httpx.Response:
    """A well-formed batch answer: every entry ``status`` with consecutive ids."""
    objects = json.loads(request.content)["objects"]
    results = [{"id": start_id + i, "status": status} for i in range(len(objects))]
    summary = {"total": len(objects), "created": 0, "updated": 0, "failed": 0}
    summary[status] = len(objects)
    return httpx.Response(200, json={"results": results, "summary": summary})


@contextmanager
def loopback(tmp_path: Path, faults: list[str], **kw: Any) -> Iterator[RecordServiceClient]:
    """A RecordServiceClient talking to a sandbox served by uvicorn on a loopback port (real
    sockets: dropped connections, Date headers), with ``faults`` injected."""
    from recordsync.sandbox.server import run_in_thread

    app = create_app(tmp_path / "sandbox.db", api_key=KEY, faults=faults)
    try:
        with run_in_thread(app) as url, httpx.Client(timeout=httpx.Timeout(10.0)) as http:
            retry = RetryPolicy(sleep=Sleeps(), **kw)
            yield RecordServiceClient(http, url, Secret(KEY), retry=retry)
    finally:
        app.state.store.close()


def records(client: RecordServiceClient, object_type: str) -> list[dict[str, Any]]:
    """Every live record of a type, read over the client (no faults on GET of the list)."""
    return list(client.list_records(object_type))

"""Loopback helpers: a real uvicorn sandbox (optionally with faults) and a real httpx client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from recordsync.core.secret import Secret
from recordsync.run.target import Target
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread
from recordsync.send.client import RecordServiceClient, make_http_client
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore
from recordsync.state.targets import keys_of

KEY = "sk_live_e2e_tests_fedcba9876543210"
REPO = Path(__file__).resolve().parents[2]
_PORTS: dict[Path, int] = {}
"""The port each database was served on: served again, it comes back there (as `recordsync
sandbox` keeps its port), so a test's runs into one database are runs into one target."""


@contextmanager
def served(
    db: Path, faults: list[str] | None = None, quirks: str | None = None
) -> Iterator[str]:
    app = create_app(db, api_key=KEY, faults=faults, quirks=quirks)
    where = Path(db).resolve()
    try:  # a database served again comes back on its port, as `recordsync sandbox` does
        with run_in_thread(app, port=_PORTS.get(where, 0)) as url:
            _PORTS[where] = int(url.rsplit(":", 1)[1])
            yield url
    finally:
        app.state.store.close()


def target(url: str, key: str = KEY, *, state_name: str | None = None) -> Target:
    """The Target of a served sandbox; ``state_name``: what the state store calls it (for
    copies of one sandbox served from other files, which are one target to the test)."""
    return Target(url, Secret(key), "test", "env RECORDSYNC_API_KEY", state_name=state_name)


@contextmanager
def loopback_client(url: str, key: str = KEY, **retry: Any) -> Iterator[RecordServiceClient]:
    policy = RetryPolicy(sleep=lambda s: None, **retry)
    http = make_http_client(httpx.Timeout(60.0))  # a loaded machine answers late, not never
    try:
        yield RecordServiceClient(http, url, Secret(key), retry=policy)
    finally:
        http.close()


def only_key(store: StateStore, pipeline: str) -> str:
    """The state key of ``pipeline``'s one target (the tests' runs go to one sandbox)."""
    keys = keys_of(store.connection, pipeline)
    assert len(keys) == 1, keys
    return next(iter(keys.values()))


def all_records(url: str, object_type: str) -> list[dict[str, Any]]:
    with loopback_client(url) as client:
        return list(client.list_records(object_type))


def journal_full_at_the_third_chunk() -> Callable[..., Any]:
    """``Journal.begin_chunk`` that fails as a full disk does on its third call (a state
    write that stops a run part-way: exit 3); ``.calls`` counts the calls."""
    import sqlite3

    from recordsync.state import Journal

    begin = Journal.begin_chunk

    def full_begin(self: Journal, *a: Any, **kw: Any) -> Any:
        full_begin.calls += 1  # type: ignore[attr-defined]
        if full_begin.calls == 3:  # type: ignore[attr-defined]
            raise sqlite3.OperationalError("database or disk is full")
        return begin(self, *a, **kw)

    full_begin.calls = 0  # type: ignore[attr-defined]
    return full_begin

"""The sandbox ASGI application: :func:`create_app` and the guard in front of the routes.

The guard runs before routing so that, on ``/api/...`` paths, the API key is checked before
anything else (unknown path, wrong method, oversized body); it also caps bodies at 5 MiB and
turns any unexpected exception into a JSON answer. Starlette's own 404/405 become JSON.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recordsync.core.secret import Secret
from recordsync.sandbox import routes_meta, routes_records
from recordsync.sandbox.catalog import Catalog
from recordsync.sandbox.faults import (
    date_offset,
    parse_fault_spec,
    stamp_offset_ms,
    wrap_with_faults,
)
from recordsync.sandbox.http import MAX_BODY, error_response, json_response
from recordsync.sandbox.openapi import openapi_document
from recordsync.sandbox.quirks import HostedQuirks, check_quirks
from recordsync.sandbox.seed import load_seed
from recordsync.sandbox.service import RecordService
from recordsync.sandbox.store import Store
from recordsync.sandbox.validation import Invalid

log = logging.getLogger("recordsync.sandbox")
ENV_KEY = "RECORDSYNC_API_KEY"
DEFAULT_DB = Path(".recordsync/sandbox.db")


def resolve_api_key(api_key: str | Secret | None) -> tuple[Secret, str]:
    """The key to use and where it came from: ``argument``, ``env`` or ``generated``."""
    if isinstance(api_key, Secret) and api_key:
        return api_key, "argument"
    if isinstance(api_key, str) and api_key:
        return Secret(api_key), "argument"
    env = os.environ.get(ENV_KEY)
    if env:
        return Secret(env), "env"
    return Secret("sk_live_" + secrets.token_urlsafe(24)), "generated"


class Guard:
    """Auth first, then the body cap, then the app; nothing escapes as a bare 500."""

    def __init__(self, app: ASGIApp, api_key: Secret) -> None:
        self.app = app
        self.key = api_key.reveal().encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = dict(scope["headers"])
        if path == "/api" or path.startswith("/api/"):
            given = headers.get(b"x-api-key", b"")
            if sum(name == b"x-api-key" for name, _ in scope["headers"]) > 1:
                # two keys: neither decides (a proxy may have added one)
                await error_response(401, "Invalid API key")(scope, receive, send)
                return
            if not given:
                await error_response(401, "Missing API key")(scope, receive, send)
                return
            if not hmac.compare_digest(given, self.key):
                await error_response(401, "Invalid API key")(scope, receive, send)
                return
        length = headers.get(b"content-length", b"0")
        if length.strip().isdigit() and int(length) > MAX_BODY:
            await error_response(413, "Request body too large")(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await error_response(413, "Request body too large")(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        started = False

        async def track(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, replay, track)
        except Exception:
            log.exception("unexpected error on %s %s", scope.get("method"), path)
            if not started:
                await error_response(500, "Internal error")(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(404, "Not found")
    if exc.status_code == 405:
        return error_response(405, "Method not allowed", dict(exc.headers or {}))
    return error_response(exc.status_code, exc.detail)


async def _invalid(request: Request, exc: Exception) -> Response:
    return error_response(400, str(exc))


async def _internal(request: Request, exc: Exception) -> Response:
    """A bug, not a client error: JSON 500 (Starlette re-raises; the guard logs it)."""
    return error_response(500, "Internal error")


class SandboxApp(Starlette):
    """A Starlette app whose outermost layer may be the fault injector."""

    fault_specs: Sequence[Any] = ()
    quirks: str | None = None
    sends_date: bool = False
    """True when the fault layer writes the ``Date`` header (a ``skew``): the server must
    not add its own (:mod:`recordsync.sandbox.server`)."""

    def build_middleware_stack(self) -> ASGIApp:
        stack: ASGIApp = Guard(super().build_middleware_stack(), self.state.api_key)
        if self.quirks == "hosted":
            stack = HostedQuirks(stack)
        if self.fault_specs:
            return wrap_with_faults(stack, list(self.fault_specs))  # type: ignore[no-any-return]
        return stack


def create_app(
    db_path: str | Path = DEFAULT_DB,
    seed: str | Path | None = None,
    api_key: str | Secret | None = None,
    faults: Sequence[Any] | None = None,
    quirks: str | None = None,
) -> SandboxApp:
    """The sandbox service on the SQLite file ``db_path`` (created with its parent dirs).

    ``seed``: a seed YAML (None: the packaged default). ``api_key``: else env
    ``RECORDSYNC_API_KEY``, else a generated ``sk_live_…`` key. ``faults``: fault specs
    (strings are parsed by :func:`recordsync.sandbox.faults.parse_fault_spec`). ``quirks``:
    ``"hosted"`` answers as the hosted service is known to (:mod:`recordsync.sandbox.quirks`).
    """
    quirks = check_quirks(quirks)
    catalog = Catalog(load_seed(seed))
    key, origin = resolve_api_key(api_key)
    specs: list[Any] = []
    stamp_offset, sends_date = 0, False
    if faults:
        specs = [parse_fault_spec(f) if isinstance(f, str) else f for f in faults]
        stamp_offset = stamp_offset_ms(specs)
        sends_date = date_offset(specs) is not None
    store = Store(db_path)
    document = openapi_document(catalog)

    async def openapi(request: Request) -> Response:
        return json_response(document)

    app = SandboxApp(
        routes=[
            *routes_records.ROUTES,
            *routes_meta.ROUTES,
            Route("/openapi.json", openapi, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error, Invalid: _invalid, Exception: _internal},
    )
    app.router.redirect_slashes = False
    app.fault_specs = specs
    app.quirks = quirks
    app.sends_date = sends_date
    app.state.api_key = key
    app.state.api_key_origin = origin
    app.state.service = RecordService(catalog, store)
    app.state.service.stamp_offset_ms = stamp_offset
    app.state.store = store
    app.state.catalog = catalog
    return app

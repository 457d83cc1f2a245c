"""``--quirks hosted``: answer where the hosted service is known to differ from the contract.

Off by default: the sandbox follows the contract. With ``hosted`` on, the answers change the
way the hosted service's are known to (the contract's "known trait" notes, and what its public
clients have seen), so that the pipeline's tests can show it copes with them over HTTP:

    a missing or wrong key        307 to ``/login`` with an HTML page, instead of a JSON 401
    a successful DELETE           204 with no body, instead of 200 ``{"success": true}``
    every JSON object answer      extra keys the pipeline does not know: ``request_id`` at the
                                  top level, ``workspace_id`` on every record, ``object_type``
                                  on every batch result, ``skipped: 0`` in a batch summary
    record ids                    JSON strings (``"42"``) in batch results and in the records
                                  of read answers (relationship values stay integers)

The rewriting happens outside the guard and the routes, on the answer only: what is stored is
the same with or without quirks. Faults (:mod:`recordsync.sandbox.faults`) sit outside this.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

QUIRKS = ("hosted",)
LOGIN_PAGE = (
    b"<!DOCTYPE html><html><head><title>Sign in</title></head>"
    b"<body><h1>Sign in</h1><p>Your session has expired.</p></body></html>"
)
WORKSPACE = "ws_sandbox"


def check_quirks(name: str | None) -> str | None:
    """``name`` when it is a known quirks mode (None: none); a ValueError otherwise."""
    if name is None or name in QUIRKS:
        return name
    raise ValueError(f"unknown quirks mode {name!r}: the known modes are {', '.join(QUIRKS)}")


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and "id" in value and "created_at" in value


def _record(record: dict[str, Any]) -> dict[str, Any]:
    out = {**record, "workspace_id": WORKSPACE}
    if isinstance(out["id"], int):
        out["id"] = str(out["id"])
    return out


def rewrite(body: Any, path: str) -> Any:
    """The hosted-style form of a JSON answer (see the module docstring)."""
    if not isinstance(body, dict) or set(body) == {"error"}:
        return body
    out: dict[str, Any] = {**body, "request_id": "req_" + secrets.token_hex(6)}
    data = out.get("data")
    if isinstance(data, dict) and _is_record(data):
        out["data"] = _record(data)
    elif isinstance(data, list) and path.startswith("/api/objects/"):
        out["data"] = [_record(r) if _is_record(r) else r for r in data]
    results = out.get("results")
    if isinstance(results, list):
        kind = path.split("/")[3] if path.count("/") >= 4 else None
        out["results"] = [
            {
                **r,
                "object_type": kind,
                **({"id": str(r["id"])} if isinstance(r.get("id"), int) else {}),
            }
            if isinstance(r, dict)
            else r
            for r in results
        ]
    summary = out.get("summary")
    if isinstance(summary, dict):
        out["summary"] = {**summary, "skipped": 0}
    return out


class HostedQuirks:
    """ASGI middleware that rewrites the inner app's answers as the hosted service's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/"):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                assert start is not None
                await self._answer(scope, start, b"".join(chunks), send)

        await self.app(scope, receive, hold)

    async def _answer(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        status = start["status"]
        headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
        if status == 401:
            status, body = 307, LOGIN_PAGE
            headers = [(b"location", b"/login"), (b"content-type", b"text/html; charset=utf-8")]
        elif status == 200 and scope["method"] == "DELETE":
            status, body = 204, b""
            headers = [(k, v) for k, v in headers if k != b"content-type"]
        elif status == 200 and body[:1] == b"{":
            payload = json.loads(body)
            body = json.dumps(rewrite(payload, scope["path"]), ensure_ascii=False).encode()
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

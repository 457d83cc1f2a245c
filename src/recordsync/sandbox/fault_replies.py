"""The answers of the sandbox's fault modes (:mod:`recordsync.sandbox.faults`): an error
status, a proxy's HTML page, a connection cut mid-answer, no answer at all, a skewed
``Date`` header."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

from recordsync.sandbox.fault_spec import FaultSpec

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Any
Send = Any
ASGIApp = Any


async def send_status(send: Send, spec: FaultSpec) -> None:
    assert spec.status is not None
    body = json.dumps({"error": f"Injected fault ({spec.text}): HTTP {spec.status}"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if spec.retry_after is not None:
        headers.append((b"retry-after", spec.retry_after.encode()))
    await send({"type": "http.response.start", "status": spec.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


HTML_PAGE = (
    "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
    "<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
"""A reverse proxy's error page (nginx's layout), as a hosted service's gateway sends it."""

_REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
_REASONS[504] = "Gateway Time-out"


async def send_html(send: Send, spec: FaultSpec) -> None:
    assert spec.status is not None
    reason = _REASONS.get(spec.status, "Error")
    body = HTML_PAGE.format(status=spec.status, reason=reason).encode()
    headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": spec.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def apply(app: ASGIApp, scope: Scope, receive: Receive) -> None:
    """Run the request to completion (so it is applied) and throw its answer away."""

    async def discard(message: Message) -> None:
        return None

    await app(scope, receive, discard)


async def wait_for_disconnect(receive: Receive) -> None:
    """Answer nothing: wait until the client closes the connection (or the server stops)."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return


async def apply_then_drop(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, spec: FaultSpec
) -> None:
    """Run the request to completion (so it is applied), then start a response that promises
    more bytes than it sends and stop: the server closes the socket and the client sees an
    incomplete response (a protocol error), exactly like a connection lost after apply."""
    captured: list[Message] = []

    async def capture(message: Message) -> None:
        captured.append(message)

    await app(scope, receive, capture)
    status = next((m["status"] for m in captured if m["type"] == "http.response.start"), 200)
    body = b"".join(m.get("body", b"") for m in captured if m["type"] == "http.response.body")
    await cut(send, status, body[: len(body) // 2])


async def cut(send: Send, status: int, partial: bytes) -> None:
    """Promise 1 KiB more than is sent, then return: the server closes the connection."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(partial) + 1024).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": partial, "more_body": True})


def dated(send: Send, offset_s: float) -> Send:
    """``send`` whose answers carry a ``Date`` header ``offset_s`` away from this clock (the
    ``skew`` fault; the server's own header is off then: ``SandboxApp.sends_date``)."""

    async def out(message: Message) -> None:
        if message["type"] == "http.response.start":
            stamp = email.utils.formatdate(time.time() + offset_s, usegmt=True).encode()
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
            message = {**message, "headers": [*headers, (b"date", stamp)]}
        await send(message)

    return out

"""A no-op record service for benchmarks: checks and answers batch upserts, stores nothing.

    python bench/noop_server.py META_JSON API_KEY [DELAY_MS]  # prints its URL, serves until
                                                              # its stdin closes

Like the peers' minimal server: a Starlette app on uvicorn (the sandbox's settings: warning
logs, no access log, no lifespan) on 127.0.0.1, on a port the OS picks. What a run needs
before it sends is answered from META_JSON (``{"schema": [...], "users": [...]}``, the
``data`` of the sandbox's GET /api/meta/schema and /users, see :func:`write_meta`). Each
``POST /api/objects/{type}/batch`` is checked as the service interface says (the key: 401;
an ``objects`` array of at most 100 entries: 400; a known object type: 404; each entry a
JSON object with a string ``name``, else that entry ``failed``), and every other entry is
answered ``created`` with a fresh id. ``DELAY_MS`` (default 0): each batch is answered that
many milliseconds after it arrived (a service's own work, without its CPU), to measure how
much of the round trips a client leaves unused.

Its listening socket says TCP and sets ``TCP_NODELAY`` (:func:`listening_socket`), as the
sandbox's server does: without it asyncio leaves Nagle's algorithm on for the accepted
connections, and every keep-alive answer waits for the client's delayed ACK (~40 ms here),
so every client, fast or slow, waits on the same stall and their ratio says nothing.

It counts what arrived: ``GET /_counts`` answers ``{"requests"`` (batches answered 200)``,
"entries": {type: n}, "distinct": {type: n}, "failed": {type: n}, "other": {"METHOD path":
n}, "nodelay": [0 or 1 for each connection it holds, this one included]}``, where an
entry's identity is its ``match_value`` when it has ``match_by``, else its ``fields.email``,
else its ``name``; ``entries == distinct == source rows`` means every row arrived exactly
once. ``GET /_counts?identities=1`` adds ``{type: {identity: n}}``. ``DELETE /_counts``
sets every count back to zero (what one of several runs against the same server sent).

It keeps a timeline: ``GET /_timeline`` answers ``[[method path, arrived, answered], ...]``
for every request but its own counts and timeline, in arrival order, where ``arrived`` is
``time.monotonic()`` when the request reached the app and ``answered`` when the last byte
of its answer was handed to the transport (one clock for every process of the machine:
bench/timeline.py sets it against the client's spawn and exit). ``DELETE /_counts`` clears it
too.

The process stops itself when its standard input closes (the benchmark holding the pipe
exits or closes it), so a crashed benchmark leaves no server behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BATCH = 100


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _identity(entry: dict[str, Any]) -> str:
    if entry.get("match_by") is not None:
        return f"{entry['match_by']}:{entry.get('match_value')}"
    fields = entry.get("fields")
    if isinstance(fields, dict) and fields.get("email"):
        return f"email:{fields['email']}"
    return f"name:{entry.get('name')}"


def listening_socket(port: int = 0) -> socket.socket:
    """A loopback TCP socket on ``port`` (0: a free one), bound, with ``TCP_NODELAY`` for what
    it accepts.

    ``IPPROTO_TCP`` as the protocol, not 0: asyncio sets ``TCP_NODELAY`` only on accepted
    sockets whose ``proto`` says TCP. The option is also set on the listener itself: Linux
    passes it on to the connections it accepts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if port:  # a fixed port, taken again right after the last server on it stopped
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def connections_nodelay(port: int) -> list[int]:
    """``TCP_NODELAY`` (0 or 1) of each connection this process accepted on ``port`` and
    still holds (Linux: read through ``/proc/self/fd``)."""
    out: list[int] = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            dup = os.dup(int(fd))
        except OSError:
            continue  # closed since it was listed
        try:
            sock = socket.socket(fileno=dup)
        except OSError:
            os.close(dup)  # not a socket (kept open, each call would double this process's files)
            continue
        with sock:
            try:
                if sock.family != socket.AF_INET or sock.type != socket.SOCK_STREAM:
                    continue
                if sock.getsockname()[1] != port:
                    continue
                sock.getpeername()  # OSError for the listener: it has no peer
                out.append(int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0))
            except OSError:
                continue
    return out


class Timeline:
    """ASGI middleware: when each request reached the app and when its answer's last byte
    was handed to the transport (``time.monotonic()``), in arrival order."""

    UNTIMED = frozenset({"/_counts", "/_timeline"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.events: list[list[Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.UNTIMED:
            await self.app(scope, receive, send)
            return
        event: list[Any] = [f"{scope['method']} {scope['path']}", time.monotonic(), None]
        self.events.append(event)

        async def timed(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                event[2] = time.monotonic()

        await self.app(scope, receive, timed)


def create_app(
    meta: dict[str, Any], api_key: str, delay_ms: float = 0.0, port: int | None = None
) -> Timeline:
    """The app; ``meta``: ``{"schema": [...], "users": [...]}``; ``delay_ms``: how long each
    batch waits before it is answered; ``port``: the port it serves on (for ``nodelay``)."""
    slugs: dict[str, str] = {}
    for ot in meta["schema"]:
        slug = str(ot["slug"])
        slugs[slug] = slug
    slugs.setdefault("contact", "contacts")
    slugs.setdefault("company", "companies")
    ids = count(1)
    lock = threading.Lock()
    entries: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    seen: dict[str, Counter[str]] = {}
    other: Counter[str] = Counter()
    requests = [0]
    delay = delay_ms / 1000
    schema_answer = orjson.dumps({"data": meta["schema"]})
    users_answer = orjson.dumps({"data": meta["users"]})

    def authorised(request: Request) -> bool:
        return request.headers.get("x-api-key") == api_key

    async def batch(request: Request) -> Response:
        if not authorised(request):
            return _json({"error": "Invalid API key"}, 401)
        ot = slugs.get(request.path_params["object_type"].lower())
        if ot is None:
            return _json({"error": "Object not found"}, 404)
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _json({"error": "Invalid JSON body"}, 400)
        objects = body.get("objects") if isinstance(body, dict) else None
        if not isinstance(objects, list):
            return _json({"error": 'Request body must contain an "objects" array'}, 400)
        if len(objects) > MAX_BATCH:
            msg = f"Batch size exceeds maximum of {MAX_BATCH}. Received {len(objects)} objects."
            return _json({"error": msg}, 400)
        results: list[dict[str, Any]] = []
        with lock:
            requests[0] += 1
            counted = seen.setdefault(ot, Counter())
            for entry in objects:
                entries[ot] += 1
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    failed[ot] += 1
                    error = "Validation failed: name: required"
                    results.append({"id": None, "status": "failed", "error": error})
                    continue
                counted[_identity(entry)] += 1
                results.append({"id": next(ids), "status": "created"})
        created = len(objects) - sum(r["status"] == "failed" for r in results)
        failures = len(objects) - created
        summary = {"total": len(objects), "created": created, "updated": 0, "failed": failures}
        if delay:
            await asyncio.sleep(delay)
        return _json({"results": results, "summary": summary})

    async def schema(request: Request) -> Response:
        if not authorised(request):
            return _json({"error": "Invalid API key"}, 401)
        return Response(schema_answer, media_type="application/json")

    async def users(request: Request) -> Response:
        if not authorised(request):
            return _json({"error": "Invalid API key"}, 401)
        return Response(users_answer, media_type="application/json")

    async def counts(request: Request) -> Response:
        with lock:
            answer: dict[str, Any] = {
                "requests": requests[0],
                "entries": dict(entries),
                "distinct": {ot: len(c) for ot, c in seen.items()},
                "failed": dict(failed),
                "other": dict(other),
            }
        if port is not None:
            answer["nodelay"] = connections_nodelay(port)
            if request.query_params.get("identities"):
                answer["identities"] = {ot: dict(c) for ot, c in seen.items()}
        return _json(answer)

    async def reset(request: Request) -> Response:
        with lock:
            timeline.events.clear()
            entries.clear()
            failed.clear()
            seen.clear()
            other.clear()
            requests[0] = 0
        return _json({"reset": True})

    async def anything_else(request: Request) -> Response:
        with lock:
            other[f"{request.method} {request.url.path}"] += 1
        return _json({"error": "Not found"}, 404)

    async def events(request: Request) -> Response:
        return _json(timeline.events)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    app = Starlette(
        routes=[
            Route("/api/objects/{object_type}/batch", batch, methods=["POST"]),
            Route("/api/meta/schema", schema, methods=["GET"]),
            Route("/api/meta/users", users, methods=["GET"]),
            Route("/_counts", counts, methods=["GET"]),
            Route("/_counts", reset, methods=["DELETE"]),
            Route("/_timeline", events, methods=["GET"]),
            Route("/{path:path}", anything_else, methods=methods),
        ]
    )
    timeline = Timeline(app)
    return timeline


def write_meta(path: Path) -> Path:
    """Save the default sandbox seed's schema and users (what a run fetches) as META_JSON."""
    import warnings

    from recordsync.sandbox import create_app as sandbox_app

    key = "sk_live_noop_meta"
    db = path.with_suffix(".meta.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's TestClient on httpx: deprecated
        from starlette.testclient import TestClient

        app = sandbox_app(db, api_key=key)
        with TestClient(app) as c:
            h = {"x-api-key": key}
            meta = {
                "schema": c.get("/api/meta/schema", headers=h).json()["data"],
                "users": c.get("/api/meta/users", headers=h).json()["data"],
            }
        app.state.store.close()
    for leftover in db.parent.glob(db.name + "*"):
        leftover.unlink()
    path.write_text(json.dumps(meta), encoding="utf-8")
    return path


@contextmanager
def noop_server(meta: Path, api_key: str, delay_ms: float = 0.0, port: int = 0) -> Iterator[str]:
    """The server in its own process; yields its base URL, stops it on exit. ``port``: a
    fixed one (a kept state knows its target by the URL), else a free one."""
    proc = subprocess.Popen(
        [sys.executable, __file__, str(meta), api_key, str(delay_ms), str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the no-op server did not start (exit {proc.wait()})")
        yield url
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the server's signal to stop
        proc.wait(timeout=60)
        proc.stdout.close()


def counts(url: str) -> dict[str, Any]:
    import httpx

    answer: dict[str, Any] = httpx.get(url + "/_counts", timeout=60).json()
    return answer


def timeline(url: str) -> list[tuple[str, float, float]]:
    """The server's timeline: ``(method path, arrived, answered)`` a request, arrival order."""
    import httpx

    events = httpx.get(url + "/_timeline", timeout=60).json()
    return [
        (str(what), float(arrived), float("nan") if answered is None else float(answered))
        for what, arrived, answered in events
    ]


def main() -> None:
    meta = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    delay_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    sock = listening_socket(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    app = create_app(meta, sys.argv[2], delay_ms, port=sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    def stop_when_stdin_closes() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    # the socket is bound before the URL is printed: a client never races the start-up
    sock.listen(128)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()

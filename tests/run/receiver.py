"""A local webhook receiver for the alert tests: a real HTTP server on 127.0.0.1 (a free
port) in a thread, recording every request (path, headers, raw body) and answering with the
statuses it is given (then 200), stopped when the ``with`` block ends."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    """Statuses to answer, in order (then 200)."""


@contextmanager
def receiver(answers: list[int] | None = None) -> Iterator[Receiver]:
    got = Receiver("", answers=list(answers or []))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                got.requests.append(Received(self.path, dict(self.headers.items()), body))
                status = got.answers.pop(0) if got.answers else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    got.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

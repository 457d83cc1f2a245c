"""Serving the sandbox: in a background thread (tests, benchmarks, dry runs) or in the
foreground (``recordsync sandbox``). Logs at warning level and never logs the API key."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from recordsync.core.errors import ConfigError


class _ThreadServer(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # a thread cannot take signals
        return


@contextmanager
def run_in_thread(app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread; yield ``http://host:port``; stop on exit.

    ``port=0`` picks a free port (the socket is bound here, so there is no race).
    """
    # proto IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it every keep-alive answer waits ~40 ms (Nagle + delayed ACK)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        date_header=not getattr(app, "sends_date", False),  # a skewed Date: the app's own
    )
    server = _ThreadServer(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="recordsync-sandbox", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the sandbox did not start on {host}:{bound_port}")
            time.sleep(0.01)
        yield f"http://[{host}]:{bound_port}" if ":" in host else f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def check_port_free(host: str, port: int) -> None:
    """Raise a ConfigError naming the address when ``host:port`` cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                key="--port",
                hint="another process uses that port (an earlier sandbox?): stop it, or pick "
                "another with --port",
            ) from None


def serve(app: ASGIApp, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve in the foreground until interrupted (Ctrl-C)."""
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="info",
        lifespan="off",
        date_header=not getattr(app, "sends_date", False),
    )

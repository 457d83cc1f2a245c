"""Serving the sandbox: in a background thread (tests, benchmarks, dry runs) or in the
foreground (``recordsync sandbox``). Logs at warning level and never logs the API key."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from recordsync.core.errors import ConfigError


class _ThreadServer(uvicorn.Server):
    """uvicorn's server for a thread, stopped at once by :meth:`stop`. uvicorn itself looks
    at its exit flag every 0.1 s and then waits 0.1 s more before looking at the connections
    it closes: about 0.2 s for every sandbox served (each dry run, test and benchmark), spent
    waiting. This one is woken when asked to stop and looks at its connections every few
    milliseconds; as uvicorn does, it still lets a request in flight finish."""

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    def install_signal_handlers(self) -> None:  # a thread cannot take signals
        return

    def stop(self) -> None:
        """Ask the server to exit (from any thread) and wake its loop."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                loop.call_soon_threadsafe(wake.set)

    async def main_loop(self) -> None:
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()  # after _wake: stop() wakes it once this is set
        counter = 0
        while not await self.on_tick(counter):  # on_tick: the Date header, the exit flag
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()  # idle: closed now; busy: closed once its answer is sent
        state = self.server_state
        while (state.connections or state.tasks) and not self.force_exit:
            await asyncio.sleep(0.005)
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


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
        server.stop()
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

"""A service that cannot be reached: the error names host:port and what to check."""

from __future__ import annotations

import socket

import httpx
import pytest

from recordsync.core.errors import RetriableApiError, exit_code_for
from recordsync.core.secret import Secret
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryPolicy


def _refused_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_names_the_host_and_what_to_check() -> None:
    port = _refused_port()
    sleeps: list[float] = []
    policy = RetryPolicy(max_attempts=2, sleep=sleeps.append)
    with httpx.Client() as http:
        client = RecordServiceClient(
            http, f"http://127.0.0.1:{port}", Secret("sk_live_secret_key_1"), retry=policy
        )
        with pytest.raises(RetriableApiError) as info:
            client.schema()
    text = str(info.value)
    assert f"GET /api/meta/schema: could not connect to 127.0.0.1:{port} (ConnectError)" in text
    assert info.value.hint is not None
    for needle in (f"http://127.0.0.1:{port}", "--base-url", "RECORDSYNC_BASE_URL", "--profile"):
        assert needle in info.value.hint
    assert "sk_live_secret_key_1" not in text
    assert exit_code_for(info.value) == 3
    assert len(sleeps) == 1  # still retried (a restarting service may come back)


def test_a_batch_that_cannot_connect_says_where_too() -> None:
    port = _refused_port()
    with httpx.Client() as http:
        client = RecordServiceClient(http, f"http://127.0.0.1:{port}", Secret("sk_live_k"))
        attempt = client.batch_once("contacts", [{"name": "A"}])
    assert attempt.verdict.kind == "retriable" and not attempt.verdict.maybe_applied
    assert f"could not connect to 127.0.0.1:{port} (ConnectError)" in attempt.verdict.describe

"""One chunk through the sender: retries, waits, in-doubt handling, reconciliation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recordsync.send.sender import ChunkAborted, ChunkSender

from .support import Sleeps, fake_client, ok_batch, sandbox_client


def scripted(*steps: Any) -> tuple[Any, list[list[dict[str, Any]]]]:
    """A handler that plays ``steps`` in order: a Response, an exception class, or "ok".
    A GET (the mark read before a chunk that may create) lists an empty type."""
    sent: list[list[dict[str, Any]]] = []
    it: Iterator[Any] = iter(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": [], "pagination": {"has_more": False}})
        sent.append(json.loads(request.content)["objects"])
        step = next(it)
        if step == "ok":
            return ok_batch(request)
        if isinstance(step, type):
            raise step("boom", request=request)
        return step  # type: ignore[no-any-return]

    return handler, sent


def statuses(report: Any) -> list[str]:
    return [r.status.value for r in report.results]


def test_503_then_ok_resends_the_whole_chunk() -> None:
    handler, sent = scripted(httpx.Response(503, json={"error": "busy"}), "ok")
    sleeps = Sleeps()
    entries = [{"name": "a"}, {"name": "b"}]
    report = ChunkSender(fake_client(handler, sleeps), "deals").send("deals#1", 2, entries)
    assert statuses(report) == ["created", "created"]
    assert sent == [entries, entries]
    assert report.attempts == 2 and len(sleeps) == 1


def test_429_waits_retry_after_and_does_not_use_the_failure_budget() -> None:
    limited = [httpx.Response(429, json={}, headers={"retry-after": "2"}) for _ in range(6)]
    handler, sent = scripted(*limited, "ok")
    sleeps = Sleeps()
    report = ChunkSender(fake_client(handler, sleeps, max_attempts=2), "deals").send(
        "c", 2, [{"name": "a"}]
    )
    assert statuses(report) == ["created"]
    assert sleeps == [2.0] * 6 and len(sent) == 7


def test_exhausted_retries_fail_every_row_with_the_reason() -> None:
    handler, sent = scripted(*[httpx.Response(503, json={"error": "busy"})] * 3)
    sleeps = Sleeps()
    report = ChunkSender(fake_client(handler, sleeps, max_attempts=3), "deals").send(
        "c", 2, [{"name": "a"}, {"name": "b"}]
    )
    assert statuses(report) == ["failed", "failed"]
    assert report.results[0].error is not None
    assert "HTTP 503: busy (after 3 tries)" in report.results[0].error
    assert len(sent) == 3 and len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 <= sleeps[1] <= 1.0  # exponential, with jitter


def test_400_fails_the_chunk_with_the_service_message() -> None:
    handler, _ = scripted(
        httpx.Response(400, json={"error": 'Request body must contain an "objects" array'})
    )
    report = ChunkSender(fake_client(handler), "deals").send("c", 2, [{"name": "a"}])
    assert statuses(report) == ["failed"]
    assert report.results[0].error is not None and "objects" in report.results[0].error


def test_auth_failure_aborts_with_an_outcome_for_every_row() -> None:
    handler, _ = scripted(httpx.Response(401, json={"error": "Invalid API key"}))
    with pytest.raises(ChunkAborted) as info:
        ChunkSender(fake_client(handler), "deals").send("c", 2, [{"name": "a"}, {"name": "b"}])
    assert statuses(info.value.report) == ["failed", "failed"]
    assert "401" in str(info.value.error)


def test_companies_with_domain_are_resent_as_is() -> None:
    handler, sent = scripted(httpx.ReadTimeout, "ok")
    entry = {"name": "Acme", "fields": {"domain": "acme.example"}}
    report = ChunkSender(fake_client(handler), "companies").send("c", 2, [entry])
    assert statuses(report) == ["created"] and sent[1] == [entry]


def test_connect_error_is_not_in_doubt() -> None:
    handler, sent = scripted(httpx.ConnectError, "ok")
    report = ChunkSender(fake_client(handler), "deals").send("c", 2, [{"name": "X"}])
    assert statuses(report) == ["created"] and sent[1] == [{"name": "X"}]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {
                "results": [{"id": 1, "status": "created"}],
                "summary": {"total": 2, "created": 2, "updated": 0, "failed": 0},
            },
            "1 results for 2 entries",
        ),
        (
            {
                "results": [{"id": 1, "status": "created"}, {"id": 2, "status": "created"}],
                "summary": {"total": 2, "created": 1, "updated": 1, "failed": 0},
            },
            "summary does not match",
        ),
        ({"results": "nope"}, "no 'results' list"),
    ],
)
def test_answers_that_do_not_add_up_make_the_chunk_unreconciled(body: Any, reason: str) -> None:
    handler, _ = scripted(httpx.Response(200, json=body))
    report = ChunkSender(fake_client(handler), "deals").send("c", 2, [{"name": "a"}, {"name": "b"}])
    assert statuses(report) == ["in_doubt", "in_doubt"]
    assert report.unreconciled is not None and reason in report.unreconciled
    assert reason in (report.results[0].error or "")


def test_per_entry_failures_from_the_sandbox(tmp_path: Path) -> None:
    with sandbox_client(tmp_path) as (client, _app):
        entries = [
            {"name": "Good", "fields": {"email": "good@x.example"}},
            {"name": "Bad", "fields": {"email": "not-an-email"}},
            {"fields": {"email": "noname@x.example"}},
        ]
        report = ChunkSender(client, "contacts").send("c", 2, entries)
    assert statuses(report) == ["created", "failed", "failed"]
    assert "email" in (report.results[1].error or "")
    assert report.results[0].record_id is not None

"""Every status class at its bounds, as the whole verdict; the service's message in each form
an answer takes; the error each verdict becomes."""

from __future__ import annotations

import httpx
import pytest

from recordsync.core.errors import (
    ApiError,
    AuthError,
    FatalApiError,
    ObjectTypeNotFound,
    RetriableApiError,
)
from recordsync.send.http_policy import (
    AUTH_HINT,
    Verdict,
    classify_exception,
    classify_response,
    is_fatal,
    service_error,
)

PATH = "/api/objects/contacts/batch"
NOW = 1_800_000_000.0
REDIRECT = "redirected instead of answering (the hosted service's answer to a bad API key)"


def answer(status: int, **headers: str) -> httpx.Response:
    req = httpx.Request("POST", "https://crm.example" + PATH)
    return httpx.Response(status, json={"error": "E"}, headers=headers, request=req)


def verdict(kind: str, status: int, message: str = "E", **kw: object) -> Verdict:
    return Verdict(kind, "POST", PATH, status, message, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (199, verdict("retriable", 199, retry_after=3.0, maybe_applied=True)),
        (200, verdict("ok", 200, "")),
        (299, verdict("ok", 299, "")),
        (300, verdict("auth", 300, REDIRECT)),
        (399, verdict("auth", 399, REDIRECT)),
        (400, verdict("rejected", 400)),
        (401, verdict("auth", 401)),
        (403, verdict("auth", 403)),
        (404, verdict("not_found", 404)),
        (408, verdict("rate_limited", 408, retry_after=3.0)),
        (429, verdict("rate_limited", 429, retry_after=3.0)),
        (499, verdict("rejected", 499)),
        (500, verdict("retriable", 500, retry_after=3.0, maybe_applied=True)),
        (503, verdict("retriable", 503, retry_after=3.0)),
        (599, verdict("retriable", 599, retry_after=3.0, maybe_applied=True)),
    ],
)
def test_each_status_class_at_its_bounds(status: int, expected: Verdict) -> None:
    assert classify_response("POST", PATH, answer(status, **{"retry-after": "3"}), NOW) == (
        expected
    )


def test_a_5xx_without_retry_after_backs_off_its_own_way() -> None:
    assert classify_response("POST", PATH, answer(502), NOW).retry_after is None


def reply(status: int, content: bytes, content_type: str = "text/plain") -> httpx.Response:
    return httpx.Response(status, content=content, headers={"content-type": content_type})


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (reply(400, b'{"error": "Bad field"}', "application/json"), "Bad field"),
        (reply(400, b'{"error": 7}', "application/json"), 'Bad Request: {"error": 7}'),
        (reply(502, b""), "Bad Gateway"),
        (httpx.Response(502), "Bad Gateway"),  # no content-type at all
        (reply(599, b""), "no error message"),
        (reply(502, b"  upstream \n  down  "), "Bad Gateway: upstream down"),
        (reply(502, b"x" * 300), "Bad Gateway: " + "x" * 200),
        (reply(502, b"\xff\xfe not json"), "Bad Gateway: \ufffd\ufffd not json"),
        (
            reply(504, b"<html><TITLE>504\n  Gateway   Time-out</TITLE></html>", "Text/HTML"),
            "Gateway Timeout: an HTML error page ('504 Gateway Time-out'), not the service's"
            " answer (a proxy or gateway)",
        ),
        (
            reply(502, b"<html><title>" + b"t" * 150 + b"</title>", "text/html; charset=utf-8"),
            f"Bad Gateway: an HTML error page ({'t' * 100!r}), not the service's answer (a"
            " proxy or gateway)",
        ),
        (
            reply(502, b"<html><body>oops</body></html>", "text/html"),
            "Bad Gateway: an HTML error page, not the service's answer (a proxy or gateway)",
        ),
    ],
)
def test_the_service_error_in_each_form(response: httpx.Response, message: str) -> None:
    assert service_error(response) == message


@pytest.mark.parametrize(
    ("exc", "message", "applied"),
    [
        (httpx.ConnectError("refused"), "could not connect (ConnectError)", False),
        (httpx.UnsupportedProtocol("ftp"), "could not connect (UnsupportedProtocol)", False),
        (httpx.ConnectTimeout("slow"), "timed out before sending (ConnectTimeout)", False),
        (httpx.PoolTimeout("pool"), "timed out before sending (PoolTimeout)", False),
        (httpx.ReadTimeout("slow"), "timed out waiting for the answer (ReadTimeout)", True),
        (
            httpx.ReadError("reset"),
            "connection lost before a complete answer (ReadError)",
            True,
        ),
    ],
)
def test_transport_failures_in_full(exc: httpx.HTTPError, message: str, applied: bool) -> None:
    assert classify_exception("POST", PATH, exc) == Verdict(
        "retriable", "POST", PATH, None, message, maybe_applied=applied
    )


@pytest.mark.parametrize(
    ("kind", "cls", "hint", "fatal"),
    [
        ("auth", AuthError, AUTH_HINT, True),
        (
            "not_found",
            ObjectTypeNotFound,
            "the object type does not exist on this target: check the step's object_type"
            " against GET /api/meta/schema",
            True,
        ),
        ("rejected", FatalApiError, None, False),
        ("rate_limited", RetriableApiError, None, False),
        ("retriable", RetriableApiError, None, False),
    ],
)
def test_each_kind_becomes_its_error(
    kind: str, cls: type[ApiError], hint: str | None, fatal: bool
) -> None:
    v = verdict(kind, 418, "teapot")
    error = v.to_error()
    assert type(error) is cls
    assert (error.detail, error.status, error.method, error.path) == ("teapot", 418, "POST", PATH)
    assert error.hint == hint
    assert is_fatal(v) is fatal


def test_a_5xx_retry_after_date_counts_from_now() -> None:
    date = "Fri, 15 Jan 2027 08:00:30 GMT"  # 30 s after NOW
    assert classify_response("POST", PATH, answer(503, **{"retry-after": date}), NOW) == (
        verdict("retriable", 503, retry_after=30.0)
    )

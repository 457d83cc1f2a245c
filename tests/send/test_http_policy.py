"""The one classification of answers: every status class, Retry-After forms, transport errors."""

from __future__ import annotations

import httpx
import pytest

from recordsync.core.errors import AuthError, FatalApiError, ObjectTypeNotFound, RetriableApiError
from recordsync.send.http_policy import (
    classify_exception,
    classify_response,
    parse_retry_after,
)

PATH = "/api/objects/contacts/batch"
NOW = 1_800_000_000.0


def answer(status: int, body: object = None, **headers: str) -> httpx.Response:
    req = httpx.Request("POST", "https://crm.example" + PATH)
    if body is None:
        return httpx.Response(status, headers=headers, request=req)
    return httpx.Response(status, json=body, headers=headers, request=req)


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_any_2xx_is_ok(status: int) -> None:
    assert classify_response("POST", PATH, answer(status), NOW).kind == "ok"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_auth_failures_and_never_show_the_location(status: int) -> None:
    v = classify_response("POST", PATH, answer(status, location="/login?key=sk_live_x"), NOW)
    assert v.kind == "auth"
    err = v.to_error()
    assert isinstance(err, AuthError)
    assert "sk_live_x" not in str(err) and "/login" not in str(err)
    assert f"POST {PATH}: HTTP {status}" in str(err)


def test_401_reads_the_error_body_and_hints_at_the_key() -> None:
    v = classify_response("POST", PATH, answer(401, {"error": "Invalid API key"}), NOW)
    err = v.to_error()
    assert isinstance(err, AuthError)
    assert str(err).startswith(f"POST {PATH}: HTTP 401: Invalid API key")
    assert "RECORDSYNC_API_KEY" in str(err)


def test_404_is_object_type_not_found() -> None:
    v = classify_response("POST", PATH, answer(404, {"error": "Object not found"}), NOW)
    assert v.kind == "not_found"
    assert isinstance(v.to_error(), ObjectTypeNotFound)


def test_400_is_rejected_with_the_service_message() -> None:
    body = {"error": "Batch size exceeds maximum of 100. Received 101 objects."}
    v = classify_response("POST", PATH, answer(400, body), NOW)
    assert v.kind == "rejected"
    assert v.message == body["error"]
    assert isinstance(v.to_error(), FatalApiError)


def test_error_body_that_is_not_json_is_described() -> None:
    req = httpx.Request("POST", "https://crm.example" + PATH)
    v = classify_response(
        "POST", PATH, httpx.Response(502, text="<html>bad gateway</html>", request=req), NOW
    )
    assert v.kind == "retriable" and "bad gateway" in v.message


def test_429_with_seconds_and_with_http_date() -> None:
    v = classify_response("POST", PATH, answer(429, {"error": "slow"}, **{"retry-after": "7"}), NOW)
    assert (v.kind, v.retry_after, v.maybe_applied) == ("rate_limited", 7.0, False)
    date = "Fri, 15 Jan 2027 08:00:30 GMT"  # 30 s after NOW
    v = classify_response("POST", PATH, answer(429, {}, **{"retry-after": date}), NOW)
    assert v.retry_after == 30.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0.0), ("2.5", 2.5), ("-3", 0.0), ("soon", None), (None, None)],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_parse_retry_after_http_date_counts_from_now() -> None:
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40.0) == 60.0
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 500.0) == 0.0


@pytest.mark.parametrize(
    ("status", "applied"), [(500, True), (502, True), (503, False), (504, True)]
)
def test_5xx_are_retriable_and_say_whether_they_may_have_applied(
    status: int, applied: bool
) -> None:
    v = classify_response("POST", PATH, answer(status, {"error": "x"}), NOW)
    assert v.kind == "retriable"
    assert v.maybe_applied is applied
    assert isinstance(v.to_error(), RetriableApiError)


@pytest.mark.parametrize(
    ("exc", "applied"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow"), False),
        (httpx.PoolTimeout("pool"), False),
        (httpx.ReadTimeout("slow"), True),
        (httpx.WriteTimeout("slow"), True),
        (httpx.RemoteProtocolError("peer closed"), True),
        (httpx.ReadError("reset"), True),
    ],
)
def test_transport_errors(exc: httpx.HTTPError, applied: bool) -> None:
    v = classify_exception("POST", PATH, exc)
    assert v.kind == "retriable"
    assert v.maybe_applied is applied
    assert v.describe.startswith(f"POST {PATH}: ")
    assert type(exc).__name__ in v.describe

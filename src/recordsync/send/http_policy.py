"""The one place that decides what an HTTP answer (or its absence) means.

Every response or transport failure is turned into a :class:`Verdict`; callers read only the
verdict's ``kind`` and never look at status codes themselves.

    kind          when                                   what the caller does
    ok            any 2xx                                read the body
    auth          401, 403, any 3xx (never followed)     abort the run (AuthError)
    not_found     404                                    abort the step (ObjectTypeNotFound)
    rejected      any other 4xx (400, 413, 422, ...)     fail the chunk with the message
    rate_limited  429 (and 408)                          wait Retry-After, resend
    retriable     5xx, connection errors, timeouts       back off with jitter, resend

``maybe_applied`` says whether the service may have applied the request although the answer
says otherwise: true for timeouts and dropped connections after the request went out, and
for 500/502/504 (a gateway or a crash mid-batch); false for 429, 503 and for failures to
connect (nothing reached the service).

Messages show method, path, status and the service's ``error`` string; never a header value.
"""

from __future__ import annotations

import email.utils
import json
import re
from dataclasses import dataclass
from typing import Literal

import httpx

from recordsync.core.errors import (
    ApiError,
    AuthError,
    FatalApiError,
    ObjectTypeNotFound,
    RetriableApiError,
)

Kind = Literal["ok", "auth", "not_found", "rejected", "rate_limited", "retriable"]

AUTH_HINT = (
    "check the API key: RECORDSYNC_API_KEY (or the api_key_env of your --profile) must hold "
    "a valid key for this base URL"
)
_NOT_APPLIED_5XX = frozenset({503})
_NOT_SENT_ERRORS: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.UnsupportedProtocol,
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one attempt came to."""

    kind: Kind
    method: str
    path: str
    status: int | None = None
    message: str = ""
    retry_after: float | None = None
    maybe_applied: bool = False

    @property
    def describe(self) -> str:
        """``POST /api/objects/contacts/batch: HTTP 503: <service error>`` (no header values)."""
        code = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{self.method} {self.path}: {code}{self.message}"

    def to_error(self) -> ApiError:
        """The exception a caller raises when it gives up on this verdict."""
        cls: type[ApiError]
        hint: str | None = None
        if self.kind == "auth":
            cls, hint = AuthError, AUTH_HINT
        elif self.kind == "not_found":
            cls = ObjectTypeNotFound
            hint = (
                "the object type does not exist on this target: check the step's "
                "object_type against GET /api/meta/schema"
            )
        elif self.kind == "rejected":
            cls = FatalApiError
        else:
            cls = RetriableApiError
        return cls(self.message, status=self.status, method=self.method, path=self.path, hint=hint)


def service_error(response: httpx.Response) -> str:
    """The service's ``{error}`` string, else a short description of the body."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    reason = response.reason_phrase or "no error message"
    if "html" in response.headers.get("content-type", "").lower():
        title = re.search(r"<title>(.*?)</title>", response.text, re.I | re.S)
        what = f" ({' '.join(title.group(1).split())[:100]!r})" if title else ""
        return f"{reason}: an HTML error page{what}, not the service's answer (a proxy or gateway)"
    text = " ".join(response.text.split()) if response.content else ""
    return f"{reason}: {text[:200]}" if text else reason


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def classify_response(method: str, path: str, response: httpx.Response, now: float) -> Verdict:
    """Classify one HTTP response."""
    status = response.status_code
    if 200 <= status < 300:
        return Verdict("ok", method, path, status)
    if 300 <= status < 400:
        # The Location header is not shown: messages never carry header values.
        msg = "redirected instead of answering (the hosted service's answer to a bad API key)"
        return Verdict("auth", method, path, status, msg)
    message = service_error(response)
    if status in (401, 403):
        return Verdict("auth", method, path, status, message)
    if status == 404:
        return Verdict("not_found", method, path, status, message)
    if status in (408, 429):
        wait = parse_retry_after(response.headers.get("retry-after"), now)
        return Verdict("rate_limited", method, path, status, message, retry_after=wait)
    if 400 <= status < 500:
        return Verdict("rejected", method, path, status, message)
    return Verdict(
        "retriable",
        method,
        path,
        status,
        message,
        retry_after=parse_retry_after(response.headers.get("retry-after"), now),
        maybe_applied=status not in _NOT_APPLIED_5XX,
    )


def classify_exception(method: str, path: str, exc: httpx.HTTPError) -> Verdict:
    """Classify a transport failure (no response at all)."""
    not_sent = isinstance(exc, _NOT_SENT_ERRORS)
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        what = "timed out" + (" before sending" if not_sent else " waiting for the answer")
    elif not_sent:
        what = "could not connect"
    else:
        what = "connection lost before a complete answer"
    return Verdict("retriable", method, path, None, f"{what} ({name})", maybe_applied=not not_sent)


def is_fatal(verdict: Verdict) -> bool:
    """Auth failures abort the run, unknown object types the step: never resent."""
    return verdict.kind in ("auth", "not_found")

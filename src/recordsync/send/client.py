"""The record service client: one injected ``httpx.Client``, the key sent as ``x-api-key``.

An answer that echoes the key back (a proxy's error page, a service quoting the request) has
it replaced by stars before its text reaches an error, a log line or the report.

Redirects are never followed (a 3xx is an authentication failure, see
:mod:`recordsync.send.http_policy`). Reads (schema, users, list) are retried by the client;
a batch is tried once per call to :meth:`RecordServiceClient.batch_once`, because whether a
failed batch may be resent is decided per entry by :mod:`recordsync.send.sender`.
The ``httpx.Client`` it is given by default is made in :mod:`recordsync.send.http_client`
(re-exported here).
"""

from __future__ import annotations

import hashlib
import hmac
import json as _json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import orjson

from recordsync.core.errors import ApiError, RetriableApiError
from recordsync.core.model import BatchInput
from recordsync.core.secret import Secret, redact
from recordsync.send.http_client import make_http_client as make_http_client
from recordsync.send.http_client import unbind
from recordsync.send.http_policy import (
    Verdict,
    classify_exception,
    classify_response,
    is_fatal,
)
from recordsync.send.retry import RetryBudget, RetryPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of a request: a verdict, and the parsed JSON body when there was one."""

    verdict: Verdict
    body: Any = None
    body_error: str | None = None
    date: str | None = None
    """The answer's ``Date`` header (GET requests only): the service's clock."""


class RecordServiceClient:
    """Talks to one record service (hosted or sandbox) with one API key."""

    def __init__(
        self,
        http: httpx.Client,
        base_url: str,
        api_key: Secret,
        *,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.retry = retry or RetryPolicy()
        self.requests_sent = 0
        self._urls: dict[str, httpx.URL] = {}
        """Each path's URL, parsed once (httpx would parse the text again every request)."""

    def __repr__(self) -> str:
        return f"RecordServiceClient(base_url={self.base_url!r}, api_key={self._api_key!r})"

    @staticmethod
    def object_path(object_type: str) -> str:
        return f"/api/objects/{quote(object_type, safe='')}"

    # -- one attempt ------------------------------------------------------------------
    def attempt(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        on_sent: Callable[[], object] | None = None,
        request: httpx.Request | None = None,
    ) -> Attempt:
        """Send one request; never raises for HTTP or transport failures. ``body``: the JSON
        request body already encoded (instead of ``json``). ``on_sent``: called once the
        request is written and its answer is being waited for (from the transport's trace
        events: httpx's own transports have them; others never call it). ``request``: the
        request already built (:meth:`build_batch`) for this ``method`` and ``path`` (then
        ``json``, ``params``, ``body`` and ``on_sent`` are not used)."""
        self.requests_sent += 1
        try:
            if request is None:
                request = self._build(method, path, json, params, body, on_sent)
            response = self.http.send(request, follow_redirects=False)
            unbind(response)
        except httpx.HTTPError as exc:
            verdict = classify_exception(method, path, exc)
            if self._unreachable(verdict):  # name the host: "could not connect to h:p (...)"
                where = f" to {urlsplit(self.base_url).netloc} ("
                verdict = replace(verdict, message=verdict.message.replace(" (", where, 1))
            log.info("%s", verdict.describe)
            return Attempt(verdict)
        verdict = classify_response(method, path, response, self.retry.clock())
        if verdict.kind != "ok":
            verdict = replace(verdict, message=redact(verdict.message, self._api_key))
            log.info("%s", verdict.describe)
            return Attempt(verdict)
        if not response.content:  # e.g. 204 on DELETE
            return Attempt(verdict, body=None)
        date = response.headers.get("date") if method == "GET" else None
        content = response.content
        if self._api_key and self._api_key.reveal().encode() in content:
            content = redact(content.decode("utf-8", "replace"), self._api_key).encode()
        try:
            return Attempt(verdict, body=parse_json(content), date=date)
        except ValueError as exc:
            return Attempt(verdict, body_error=f"answer is not JSON ({type(exc).__name__})")

    def _build(
        self,
        method: str,
        path: str,
        json: Any,
        params: Mapping[str, Any] | None,
        body: bytes | None,
        on_sent: Callable[[], object] | None,
    ) -> httpx.Request:
        headers = {"x-api-key": self._api_key.reveal()}
        if body is not None:
            headers["content-type"] = "application/json"
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx.URL(self.base_url + path)
        return self.http.build_request(
            method,
            url,
            json=json,
            content=body,
            params=params,
            headers=headers,
            extensions=None if on_sent is None else {"trace": _on_body_sent(on_sent)},
        )

    # -- retried requests ---------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """Send with retries (for idempotent requests); raise the ApiError when giving up."""
        budget = RetryBudget(self.retry)
        while True:
            result = self.attempt(method, path, json=json, params=params)
            verdict = result.verdict
            if verdict.kind == "ok":
                if result.body_error is not None:
                    raise ApiError(
                        result.body_error, status=verdict.status, method=method, path=path
                    )
                return result.body
            if is_fatal(verdict) or verdict.kind == "rejected":
                raise verdict.to_error()
            wait = budget.next_wait(verdict)
            if wait is None:
                raise self._give_up(verdict)
            budget.wait(wait)

    @staticmethod
    def _unreachable(verdict: Verdict) -> bool:
        """No answer and nothing sent: the service could not be reached at all."""
        return verdict.kind == "retriable" and verdict.status is None and not verdict.maybe_applied

    def _give_up(self, verdict: Verdict) -> ApiError:
        if not self._unreachable(verdict):
            return verdict.to_error()
        return RetriableApiError(
            verdict.message,
            method=verdict.method,
            path=verdict.path,
            hint=f"is the record service up at {self.base_url}, and is that the right URL? It "
            "comes from --base-url, RECORDSYNC_BASE_URL, or the base_url of the profile chosen "
            "by --profile, RECORDSYNC_PROFILE or the pipeline's target (configs/profiles.yaml)",
        )

    def _data(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        body = self.request("GET", path, params=params)
        if not isinstance(body, dict) or "data" not in body:
            raise ApiError("answer has no 'data' key", method="GET", path=path)
        return body["data"]

    def schema(self) -> list[dict[str, Any]]:
        """``GET /api/meta/schema`` → the object type definitions."""
        data = self._data("/api/meta/schema")
        return list(data) if isinstance(data, list) else []

    def users(self) -> list[dict[str, Any]]:
        """``GET /api/meta/users`` → the organization's users."""
        data = self._data("/api/meta/users")
        return list(data) if isinstance(data, list) else []

    def batch_once(
        self,
        object_type: str,
        objects: list[BatchInput],
        body: bytes | None = None,
        on_sent: Callable[[], object] | None = None,
        *,
        request: httpx.Request | None = None,
    ) -> Attempt:
        """One try of ``POST /api/objects/{type}/batch`` (at most 100 entries); ``body``:
        ``{"objects": objects}`` already encoded (:func:`encode_batch`), if at hand;
        ``on_sent`` as for :meth:`attempt`; ``request``: that try's request, built ahead by
        :meth:`build_batch` (then ``body`` and ``on_sent`` are not used)."""
        path = self.object_path(object_type) + "/batch"
        if request is not None:
            return self.attempt("POST", path, request=request)
        if body is not None:
            return self.attempt("POST", path, body=body, on_sent=on_sent)
        return self.attempt("POST", path, json={"objects": objects}, on_sent=on_sent)

    def build_batch(
        self, object_type: str, body: bytes, on_sent: Callable[[], object] | None = None
    ) -> httpx.Request | None:
        """The request :meth:`batch_once` would send for ``body``, built ahead: the runner
        builds it while the previous chunk is in flight, so that the sender's thread only
        writes it (building one takes about 0.1 ms of interpreter time). None if it cannot
        be built: :meth:`batch_once` then builds it and reports the failure as usual."""
        path = self.object_path(object_type) + "/batch"
        try:
            return self._build("POST", path, None, None, body, on_sent)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError, TypeError):
            return None

    def list_records(
        self, object_type: str, *, page_size: int = 200, **params: Any
    ) -> Iterator[dict[str, Any]]:
        """Every record of a type, page by page (the sandbox's/hosted service's list shape)."""
        offset = 0
        while True:
            query = {**params, "limit": page_size, "offset": offset}
            body = self.request("GET", self.object_path(object_type), params=query)
            page = body.get("data", []) if isinstance(body, dict) else []
            yield from page
            more = isinstance(body, dict) and (body.get("pagination") or {}).get("has_more")
            if not page or not more:
                return
            offset += len(page)

    def list_page(
        self, object_type: str, *, limit: int, offset: int, **params: Any
    ) -> tuple[list[dict[str, Any]], int | None]:
        """One page of the list endpoint: its records and ``pagination.total`` (None when the
        service gives none)."""
        query = {**params, "limit": limit, "offset": offset}
        body = self.request("GET", self.object_path(object_type), params=query)
        page = body.get("data", []) if isinstance(body, dict) else []
        pagination = body.get("pagination") if isinstance(body, dict) else None
        total = pagination.get("total") if isinstance(pagination, dict) else None
        records = [r for r in page if isinstance(r, dict)] if isinstance(page, list) else []
        return records, total if isinstance(total, int) and not isinstance(total, bool) else None

    def trigger_skill(self, skill_id: str, body: bytes) -> Attempt:
        """One try of ``POST /api/webhooks/{skillId}`` with ``body`` (JSON), signed as the
        service checks it: ``x-webhook-signature: sha256=<hex HMAC-SHA256 of the body keyed
        with the API key>``. Never retried here: a lost answer may have started the skill."""
        path = f"/api/webhooks/{quote(skill_id, safe='')}"
        digest = hmac.new(self._api_key.reveal().encode("utf-8"), body, hashlib.sha256)
        request = self._build("POST", path, None, None, body, None)
        request.headers["x-webhook-signature"] = "sha256=" + digest.hexdigest()
        return self.attempt("POST", path, request=request)

    def delete(self, object_type: str, record_id: int) -> bool:
        """Soft-delete a record; any 2xx (200 with a body, or 204 without) is success."""
        body = self.request("DELETE", self.object_path(object_type), json={"id": record_id})
        return not (isinstance(body, dict) and body.get("success") is False)


def _on_body_sent(callback: Callable[[], object]) -> Callable[[str, Any], None]:
    """An httpcore ``trace`` extension that calls ``callback`` when the request is written
    and the wait for the answer begins (HTTP/1.1 or HTTP/2)."""

    def trace(event: str, info: Any) -> None:
        if event.endswith("receive_response_headers.started"):
            callback()

    return trace


def parse_json(content: bytes) -> Any:
    """An answer's JSON: orjson (fast, on the sender's path between two requests), else
    ``json.loads`` for what orjson refuses and the standard library reads (NaN, integers
    beyond 64 bits, UTF-16); raises ValueError if neither reads it."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return _json.loads(content)


def encode_batch(objects: list[BatchInput]) -> bytes:
    """The body of a batch request, as httpx's ``json=`` would encode it (compact, UTF-8):
    done ahead, while the previous chunk is in flight."""
    return _json.dumps(
        {"objects": objects}, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")

"""The client against the in-process sandbox, and against fakes for what the sandbox cannot do."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import httpx
import pytest

from recordsync.core.errors import AuthError, ObjectTypeNotFound, RetriableApiError

from .support import KEY, Sleeps, fake_client, sandbox_client


def test_schema_users_batch_list_delete_against_the_sandbox(tmp_path: Path) -> None:
    with sandbox_client(tmp_path) as (client, _app):
        slugs = {t["slug"] for t in client.schema()}
        assert {"contacts", "companies", "deals"} <= slugs
        assert "Ada Lovelace" in {u["full_name"] for u in client.users()}
        objects = [{"name": f"P{i}", "fields": {"email": f"p{i}@x.example"}} for i in range(3)]
        attempt = client.batch_once("contacts", objects)
        assert attempt.verdict.kind == "ok"
        assert [r["status"] for r in attempt.body["results"]] == ["created"] * 3
        listed = list(client.list_records("contacts", page_size=2))
        assert sorted(r["name"] for r in listed) == ["P0", "P1", "P2"]
        assert client.delete("contacts", listed[0]["id"]) is True
        assert len(list(client.list_records("contacts"))) == 2


def test_the_key_goes_in_the_header_and_nowhere_else(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503, json={"error": "down"})

    caplog.set_level(logging.DEBUG)
    client = fake_client(handler, max_attempts=2)
    with pytest.raises(RetriableApiError) as info:
        client.schema()
    assert all(r.headers["x-api-key"] == KEY for r in seen)
    assert all(KEY not in str(r.url) for r in seen)
    for text in (str(info.value), repr(info.value), repr(client), caplog.text):
        assert KEY not in text


def test_redirect_is_not_followed_and_is_an_auth_error(tmp_path: Path) -> None:
    with sandbox_client(tmp_path, quirks="hosted") as (client, _app):
        client._api_key = type(client._api_key)("sk_live_wrong")
        for call in (client.users, client.schema):
            with pytest.raises(AuthError) as info:
                call()
            assert "HTTP 307" in str(info.value) and "/login" not in str(info.value)
        error = client.batch_once("contacts", [{"name": "A"}]).verdict.to_error()
        assert isinstance(error, AuthError) and "HTTP 307" in str(error)


def test_wrong_key_against_the_sandbox_is_an_auth_error(tmp_path: Path) -> None:
    with sandbox_client(tmp_path) as (client, _app):
        client._api_key = type(client._api_key)("sk_live_wrong")
        with pytest.raises(AuthError, match="HTTP 401: Invalid API key"):
            client.schema()


def test_hosted_answers_204_extra_keys_and_string_ids_are_understood(tmp_path: Path) -> None:
    with sandbox_client(tmp_path, quirks="hosted") as (client, _app):
        assert "Ada Lovelace" in {u["full_name"] for u in client.users()}  # extra request_id
        attempt = client.batch_once("contacts", [{"name": "A", "fields": {"email": "a@x.ex"}}])
        assert attempt.verdict.kind == "ok"
        record_id = int(attempt.body["results"][0]["id"])  # a string in this mode
        assert client.delete("contacts", record_id) is True  # 204, no body
        assert list(client.list_records("contacts")) == []


def test_reads_are_retried_after_5xx_and_429_with_waits() -> None:
    answers = iter(
        [
            httpx.Response(503, json={"error": "busy"}),
            httpx.Response(429, json={"error": "slow"}, headers={"retry-after": "3"}),
            httpx.Response(200, json={"data": []}),
        ]
    )
    sleeps = Sleeps()
    client = fake_client(lambda request: next(answers), sleeps)
    assert client.schema() == []
    assert len(sleeps) == 2 and sleeps[1] == 3.0
    assert 0.25 <= sleeps[0] <= 0.5  # first backoff: half to all of base_delay


def test_unknown_object_type_on_batch(tmp_path: Path) -> None:
    with sandbox_client(tmp_path) as (client, _app):
        attempt = client.batch_once("tickets", [{"name": "x"}])
        assert attempt.verdict.kind == "not_found"
        assert isinstance(attempt.verdict.to_error(), ObjectTypeNotFound)


def test_batch_once_never_raises_on_transport_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    attempt = fake_client(handler).batch_once("contacts", [{"name": "x"}])
    assert attempt.verdict.kind == "retriable" and attempt.verdict.maybe_applied


def test_a_pre_encoded_batch_body_is_sent_as_httpx_would_encode_it() -> None:
    from recordsync.send.client import encode_batch

    objects = [{"name": "Zoë", "fields": {"n": 1.5, "tags": ["a", "b"], "x": None}}]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "results": [{"status": "created", "id": 1}],
                "summary": {"total": 1, "created": 1, "updated": 0, "failed": 0},
            },
        )

    client = fake_client(handler)
    client.batch_once("contacts", objects)
    client.batch_once("contacts", objects, encode_batch(objects))
    built = client.build_batch("contacts", encode_batch(objects))
    assert built is not None
    attempt = client.batch_once("contacts", [{"name": "not sent"}], request=built)
    assert attempt.verdict.kind == "ok" and attempt.body["summary"]["created"] == 1
    plain, pre, ahead = seen
    assert ahead is built
    for request in (pre, ahead):
        assert request.content == plain.content
        assert request.url == plain.url and request.method == plain.method == "POST"
        assert dict(request.headers) == dict(plain.headers)
        assert request.extensions.get("timeout") == plain.extensions.get("timeout")
    assert plain.headers["content-type"] == "application/json"
    assert client.requests_sent == 3


def test_each_path_s_url_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx parses a URL given as text on every request (about a fifth of building one):
    the client gives it each path's URL parsed once."""
    import httpx._urls

    parsed: list[str] = []
    urlparse = httpx._urls.urlparse

    def counted(url: str = "", **kw: object) -> object:
        parsed.append(url)
        return urlparse(url, **kw)  # type: ignore[arg-type]

    client = fake_client(lambda request: httpx.Response(200))
    monkeypatch.setattr(httpx._urls, "urlparse", counted)
    built = [client.build_batch("contacts", b'{"objects":[]}') for _ in range(3)]
    assert parsed == ["https://crm.example/api/objects/contacts/batch"]
    assert {str(b.url) for b in built if b is not None} == {
        "https://crm.example/api/objects/contacts/batch"
    }


def test_a_batch_request_that_cannot_be_built_ahead_fails_when_sent() -> None:
    """build_batch gives None (the runner then leaves building to the sender, which meets
    the same error). Such a base URL never gets this far: settings refuse it (test_settings)."""
    from recordsync.core.secret import Secret
    from recordsync.send.client import RecordServiceClient

    client = RecordServiceClient(httpx.Client(), "http://[::1", Secret(KEY))
    assert client.build_batch("contacts", b'{"objects":[]}') is None
    with pytest.raises(httpx.InvalidURL):
        client.batch_once("contacts", [{"name": "x"}])


def test_on_sent_is_called_when_the_request_is_written_over_a_socket(tmp_path: Path) -> None:
    """httpx's own transport reports (trace events) when the request is on the wire and the
    answer is awaited; the runner waits for that before its own work competes with the
    sender thread. Transports without trace events never call it."""
    from recordsync.core.secret import Secret
    from recordsync.sandbox import create_app
    from recordsync.sandbox.server import run_in_thread
    from recordsync.send.client import RecordServiceClient

    app = create_app(tmp_path / "s.db", api_key=KEY)
    calls: list[str] = []
    entry = {"name": "Ada", "fields": {"email": "ada@x.example"}}
    try:
        with run_in_thread(app) as url, httpx.Client() as http:
            client = RecordServiceClient(http, url, Secret(KEY))
            attempt = client.batch_once("contacts", [entry], on_sent=lambda: calls.append("on"))
            assert attempt.verdict.kind == "ok" and calls == ["on"]
    finally:
        app.state.store.close()
    mocked = fake_client(lambda r: httpx.Response(200, json={"results": [], "summary": {}}))
    mocked.batch_once("contacts", [entry], on_sent=lambda: calls.append("mock"))
    assert calls == ["on"]


def test_a_client_for_a_plain_http_target_has_no_tls_and_refuses_https(tmp_path: Path) -> None:
    """``make_http_client(base_url=http://…)`` skips loading the CA bundle; it then must never
    talk TLS (it could not check a certificate): an https URL fails before connecting."""
    from recordsync.core.secret import Secret
    from recordsync.sandbox import create_app
    from recordsync.sandbox.server import run_in_thread
    from recordsync.send.client import RecordServiceClient, make_http_client

    app = create_app(tmp_path / "s.db", api_key=KEY)
    try:
        with run_in_thread(app) as url, make_http_client(base_url=url) as http:
            assert RecordServiceClient(http, url, Secret(KEY)).users()
            with pytest.raises(httpx.UnsupportedProtocol, match="plain-http target"):
                http.get("https://127.0.0.1:9/api/meta/users")
    finally:
        app.state.store.close()
    for url in ("https://crm.example", None):  # certificates checked (httpx internals)
        with make_http_client(base_url=url) as http:
            context = http._transport._pool._ssl_context  # type: ignore[attr-defined]
            assert context.verify_mode == ssl.CERT_REQUIRED and not http._mounts


def test_answers_are_read_as_the_standard_library_reads_them() -> None:
    """parse_json: orjson first; what orjson refuses and json.loads reads is read all the same;
    neither reading it is a ValueError (the chunk's answer is then 'not JSON')."""
    import json

    from recordsync.send.client import parse_json

    for text in ('{"a": [1, "é", null]}', '{"n": NaN, "big": 123456789012345678901234567890}'):
        assert parse_json(text.encode()) == json.loads(text)
    assert parse_json('{"a": 1}'.encode("utf-16")) == {"a": 1}
    with pytest.raises(ValueError):
        parse_json(b"<html>proxy error</html>")


def test_the_client_keeps_no_cookies() -> None:
    """An answer's Set-Cookie is read but never stored or sent back (the key authenticates
    every request); a cookie cannot be set on the client either."""
    from recordsync.send.client import make_http_client

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": []}, headers={"set-cookie": "lb=node-7; Path=/"})

    http = make_http_client(base_url="http://service.example")
    http._transport = httpx.MockTransport(handler)  # the client's own settings, a fake wire
    for _ in range(2):
        assert http.get("http://service.example/api/meta/users").json() == {"data": []}
    assert all("cookie" not in r.headers for r in seen)
    assert len(http.cookies) == 0
    with pytest.raises(ValueError, match="no cookies"):
        http.cookies = {"lb": "node-7"}
    http.cookies.set("x", "y")  # set by hand: this client's jar only, never shared
    assert len(make_http_client(base_url="http://service.example").cookies) == 0


def test_an_answer_that_echoes_the_key_never_carries_it_further() -> None:
    """A proxy or service quoting the request's key back (fake: the sandbox never does):
    the error text and the parsed answer hold stars instead."""
    from recordsync.core.secret import Secret
    from recordsync.send.client import RecordServiceClient

    key = "sk_live_echoed_back_0123456789"

    def echo(request: httpx.Request) -> httpx.Response:
        said = request.headers["x-api-key"]
        if request.url.path.endswith("/schema"):
            return httpx.Response(401, json={"error": f"invalid API key {said}"})
        entry = {"status": "failed", "error": f"key {said} may not write here"}
        return httpx.Response(200, json={"results": [entry], "summary": {"total": 1}})

    http = httpx.Client(transport=httpx.MockTransport(echo))
    client = RecordServiceClient(http, "https://crm.example", Secret(key))
    with pytest.raises(AuthError) as info:
        client.schema()
    assert key not in str(info.value) and "invalid API key **********" in str(info.value)
    attempt = client.batch_once("contacts", [{"name": "A"}])
    assert key not in repr(attempt.body) and "key ********** may not" in repr(attempt.body)


def test_an_answered_request_and_its_body_are_freed_without_the_cyclic_gc(tmp_path: Path) -> None:
    """httpx binds a response's stream to the response (a reference cycle holding the request
    and its body); the client breaks it, so nothing waits for a full collection (which a run's
    frozen batches defer: recordsync.tuning.gcpause). Over a real loopback socket."""
    import gc
    import weakref

    from .support import loopback

    with loopback(tmp_path, []) as client:
        body = b'{"objects":[{"name":"Acme","fields":{"domain":"acme.example"}}]}'
        request = client.build_batch("companies", body)
        assert request is not None
        gone = weakref.ref(request)
        enabled = gc.isenabled()
        gc.disable()
        try:
            attempt = client.batch_once("companies", [], request=request)
            del request
            assert attempt.verdict.kind == "ok"
            assert gone() is None
        finally:
            if enabled:
                gc.enable()

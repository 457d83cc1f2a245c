"""Transport rules of the contract: auth first, JSON everywhere, 404/405/413, key handling."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from recordsync.core.secret import Secret
from recordsync.sandbox import create_app
from recordsync.sandbox.app import SandboxApp

from .support import KEY, TestClient


@pytest.fixture
def anon(app: SandboxApp) -> TestClient:
    return TestClient(app)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/meta/schema"),
        ("GET", "/api/meta/users"),
        ("POST", "/api/objects/contacts/batch"),
        ("POST", "/api/objects/nosuchtype/batch"),  # auth before the unknown type
        ("GET", "/api/nosuchpath"),  # auth before the unknown path
        ("DELETE", "/api/meta/schema"),  # auth before the wrong method
        ("PUT", "/api/objects/contacts"),
        ("POST", "/api/webhooks/00000000-0000-4000-8000-000000000001"),
    ],
)
def test_missing_and_wrong_key_are_401_before_anything_else(
    anon: TestClient, method: str, path: str
) -> None:
    r = anon.request(method, path, content=b"not json")
    assert r.status_code == 401
    assert r.json() == {"error": "Missing API key"}
    assert r.headers["content-type"] == "application/json"
    r = anon.request(method, path, content=b"not json", headers={"x-api-key": KEY + "x"})
    assert (r.status_code, r.json()) == (401, {"error": "Invalid API key"})


def test_oversized_body_is_401_without_key_and_413_with_it(anon: TestClient) -> None:
    big = b"{" + b" " * (5 * 1024 * 1024) + b"}"
    r = anon.put("/api/objects/contacts", content=big)
    assert r.status_code == 401
    r = anon.put("/api/objects/contacts", content=big, headers={"x-api-key": KEY})
    assert (r.status_code, r.json()) == (413, {"error": "Request body too large"})


def test_body_of_exactly_5_mib_is_accepted(client: TestClient) -> None:
    body = b'{"name": "Big", "fields": {}}'
    body = body[:-1] + b" " * (5 * 1024 * 1024 - len(body)) + b"}"
    assert len(body) == 5 * 1024 * 1024
    assert client.put("/api/objects/contacts", content=body).status_code == 200


def test_unknown_path_trailing_slash_and_wrong_method(client: TestClient) -> None:
    for path in ("/api/nope", "/api/objects/contacts/", "/api/meta/schema/", "/"):
        r = client.get(path, follow_redirects=False)
        assert (r.status_code, r.json()) == (404, {"error": "Not found"})
    r = client.delete("/api/meta/users")
    assert r.status_code == 405 and "error" in r.json()
    assert r.headers["content-type"] == "application/json"
    assert client.get("/api/objects/contacts/batch").status_code == 405


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'"text"',
        b"null",
        b"42",
        b'{"name": NaN}',
        b'{"name": "a\\u0000b"}',
        b'{"name": "\\ud800"}',
        b'{"a\\u0000": 1}',
        b"\xff\xfe",
        b"[" * 100000,
        b'{"n": 1e999}',
    ],
)
def test_invalid_json_bodies_are_400(client: TestClient, body: bytes) -> None:
    for method, path in (
        ("PUT", "/api/objects/contacts"),
        ("POST", "/api/objects/deals/batch"),
        ("PATCH", "/api/objects/deals"),
        ("DELETE", "/api/objects/deals"),
    ):
        r = client.request(method, path, content=body)
        assert (r.status_code, r.json()) == (400, {"error": "Invalid JSON body"}), (method, body)


def test_openapi_needs_no_key(anon: TestClient) -> None:
    r = anon.get("/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["components"]["securitySchemes"]["ApiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
    }


def test_key_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECORDSYNC_API_KEY", raising=False)
    generated = create_app(tmp_path / "a.db")
    key = generated.state.api_key
    assert isinstance(key, Secret) and key.reveal().startswith("sk_live_")
    assert generated.state.api_key_origin == "generated"
    assert (
        TestClient(generated)
        .get("/api/meta/users", headers={"x-api-key": key.reveal()})
        .status_code
        == 200
    )
    monkeypatch.setenv("RECORDSYNC_API_KEY", "sk_live_from_env")
    from_env = create_app(tmp_path / "b.db")
    assert from_env.state.api_key.reveal() == "sk_live_from_env"
    explicit = create_app(tmp_path / "c.db", api_key=Secret("sk_live_given"))
    assert explicit.state.api_key.reveal() == "sk_live_given"
    assert "sk_live_given" not in repr(explicit.state.api_key)


def test_key_never_logged(app: SandboxApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = TestClient(app)
    client.get("/api/meta/users", headers={"x-api-key": KEY})
    client.get("/api/meta/users", headers={"x-api-key": "sk_live_wrong"})
    assert KEY not in caplog.text and "sk_live_wrong" not in caplog.text


def test_db_parent_dirs_are_created(tmp_path: Path) -> None:
    app = create_app(tmp_path / "deep" / "er" / "sandbox.db", api_key=KEY)
    assert (tmp_path / "deep" / "er" / "sandbox.db").exists()
    app.state.store.close()


def test_faults_are_applied_when_given(tmp_path: Path) -> None:
    app = create_app(tmp_path / "f.db", api_key=KEY, faults=["status:503:every=2"])
    client = TestClient(app, headers={"x-api-key": KEY})
    codes = [client.get("/api/meta/users").status_code for _ in range(4)]
    assert sorted(codes) == [200, 200, 503, 503]


def test_a_bug_is_a_json_500_and_logged_without_the_key(
    app: SandboxApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(app.state.service, "check_name", boom)  # no request can cause this
    r = TestClient(app, headers={"x-api-key": KEY}).put("/api/objects/contacts", json={"name": "x"})
    assert (r.status_code, r.json()) == (500, {"error": "Internal error"})
    assert r.headers["content-type"] == "application/json"
    assert "simulated bug" in caplog.text and KEY not in caplog.text

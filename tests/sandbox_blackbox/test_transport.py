"""Transport: auth, JSON bodies, size limit, unknown paths, methods, content type."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from .conftest import KEY, err

FIVE_MIB = 5 * 1024 * 1024


@pytest.fixture
def nokey(client: TestClient) -> TestClient:
    """The same fresh sandbox, with no default key header."""
    client.headers.pop("x-api-key", None)
    return client


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/meta/schema"),
        ("GET", "/api/meta/users"),
        ("PUT", "/api/objects/contacts"),
        ("POST", "/api/objects/contacts"),
        ("DELETE", "/api/objects/contacts"),
        ("PATCH", "/api/objects/contacts"),
        ("POST", "/api/objects/contacts/batch"),
        ("GET", "/api/objects/contacts"),
        ("GET", "/api/objects/contacts/views"),
        ("GET", "/api/objects/contacts/views/7a1e0c52-0001-4000-8000-000000000001"),
        ("POST", "/api/webhooks/00000000-0000-4000-8000-000000000001"),
    ],
)
def test_missing_key_is_401_on_every_endpoint(nokey: TestClient, method: str, path: str) -> None:
    response = nokey.request(method, path, json={"objects": [], "name": "x"})
    assert response.status_code == 401
    assert err(response) == "Missing API key"
    assert response.headers["content-type"].startswith("application/json")


def test_wrong_key_is_401_invalid(nokey: TestClient) -> None:
    response = nokey.get("/api/meta/schema", headers={"x-api-key": KEY + "x"})
    assert response.status_code == 401
    assert err(response) == "Invalid API key"
    response = nokey.get("/api/meta/schema", headers={"x-api-key": "sk_live_other"})
    assert response.status_code == 401
    assert err(response) == "Invalid API key"


def test_header_name_is_case_insensitive(nokey: TestClient) -> None:
    assert nokey.get("/api/meta/users", headers={"X-API-KEY": KEY}).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("PUT", "/api/objects/widgets", b'{"name": "x"}'),
        ("POST", "/api/objects/widgets/batch", b'{"objects": []}'),
        ("GET", "/api/nowhere", b""),
        ("GET", "/api/objects/contacts/", b""),
        ("DELETE", "/api/meta/schema", b""),
        ("PUT", "/api/objects/contacts", b"{not json"),
        ("POST", "/api/objects/contacts/batch", json.dumps({"objects": [{}] * 101}).encode()),
        ("POST", "/api/webhooks/00000000-0000-4000-8000-0000000000ff", b"{}"),
    ],
)
def test_auth_is_checked_before_anything_else(
    nokey: TestClient, method: str, path: str, content: bytes
) -> None:
    response = nokey.request(method, path, content=content)
    assert response.status_code == 401
    assert err(response) == "Missing API key"
    response = nokey.request(method, path, content=content, headers={"x-api-key": "sk_live_bad"})
    assert response.status_code == 401
    assert err(response) == "Invalid API key"


def test_auth_before_oversized_body(nokey: TestClient) -> None:
    body = b'{"name": "' + b"a" * FIVE_MIB + b'"}'
    response = nokey.put("/api/objects/contacts", content=body)
    assert response.status_code == 401
    assert err(response) == "Missing API key"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"[]",
        b'"a string"',
        b"42",
        b"null",
        b'[{"name": "x"}]',
        b'{"name": "a\\u0000b"}',
        b'{"name": "ok", "fields": {"job_title": "x\\u0000"}}',
        b'{"name": "\\ud800"}',
        b'{"name": "ok", "fields": {"job_title": "\\udfff tail"}}',
        b'{"\\ud83d": 1}',
        b"\xff\xfe{}",
    ],
)
def test_bad_json_bodies_on_put(client: TestClient, content: bytes) -> None:
    response = client.put("/api/objects/contacts", content=content)
    assert response.status_code == 400
    assert err(response) == "Invalid JSON body"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/objects/contacts/batch"),
        ("POST", "/api/objects/contacts"),
        ("PATCH", "/api/objects/contacts"),
        ("DELETE", "/api/objects/contacts"),
        ("POST", "/api/webhooks/00000000-0000-4000-8000-000000000001"),
    ],
)
@pytest.mark.parametrize("content", [b"{oops", b"[1, 2]", b'{"x": "\\u0000"}'])
def test_bad_json_bodies_everywhere(
    client: TestClient, method: str, path: str, content: bytes
) -> None:
    response = client.request(method, path, content=content)
    assert response.status_code == 400
    assert err(response) == "Invalid JSON body"


def test_valid_surrogate_pair_is_fine(client: TestClient) -> None:
    response = client.put("/api/objects/contacts", content=b'{"name": "smile \\ud83d\\ude00"}')
    assert response.status_code == 200
    assert response.json()["data"]["name"] == "smile \U0001f600"


def test_body_over_5_mib_is_413(client: TestClient) -> None:
    body = b'{"name": "' + b"a" * FIVE_MIB + b'"}'
    response = client.put("/api/objects/contacts", content=body)
    assert response.status_code == 413
    assert err(response) == "Request body too large"
    response = client.post("/api/objects/contacts/batch", content=body)
    assert response.status_code == 413
    assert err(response) == "Request body too large"


def test_body_of_exactly_5_mib_is_not_too_large(client: TestClient) -> None:
    head = b'{"name": "Big", "fields": {"description": "'
    tail = b'"}}'
    body = head + b"d" * (FIVE_MIB - len(head) - len(tail)) + tail
    assert len(body) == FIVE_MIB
    response = client.put("/api/objects/companies", content=body)
    assert response.status_code != 413
    assert response.status_code < 500


@pytest.mark.parametrize(
    "path",
    [
        "/api/nowhere",
        "/api/objects",
        "/api/objects/contacts/",
        "/api/meta/schema/",
        "/api/meta/users/",
        "/api/objects/contacts/batch/",
        "/api/meta",
        "/api/objects/contacts/batch/extra",
        "/nowhere",
    ],
)
def test_unknown_path_is_404_not_found(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert err(response) == "Not found"
    assert response.headers["content-type"].startswith("application/json")


def test_trailing_slash_is_not_a_redirect(client: TestClient) -> None:
    for method in ("GET", "PUT", "POST"):
        response = client.request(method, "/api/objects/contacts/", json={"name": "x"})
        assert response.status_code == 404
        assert err(response) == "Not found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/meta/schema"),
        ("POST", "/api/meta/schema"),
        ("PUT", "/api/meta/users"),
        ("GET", "/api/objects/contacts/batch"),
        ("PUT", "/api/objects/contacts/batch"),
        ("GET", "/api/webhooks/00000000-0000-4000-8000-000000000001"),
        ("DELETE", "/api/objects/contacts/views"),
    ],
)
def test_wrong_method_is_405(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    err(response)
    assert response.headers["content-type"].startswith("application/json")


def test_content_type_is_json_on_every_response(client: TestClient) -> None:
    responses = [
        client.get("/api/meta/schema"),
        client.get("/api/meta/users"),
        client.put("/api/objects/contacts", json={"name": "A"}),
        client.put("/api/objects/contacts", json={}),
        client.put("/api/objects/widgets", json={"name": "A"}),
        client.get("/api/objects/contacts"),
        client.get("/api/objects/contacts", params={"id": 1}),
        client.request("DELETE", "/api/objects/contacts", json={"id": 1}),
        client.request("DELETE", "/api/objects/contacts", json={"id": 1}),
        client.post("/api/objects/contacts/batch", json={"objects": []}),
        client.get("/api/nowhere"),
        client.delete("/api/meta/users"),
        client.get("/api/meta/users", headers={"x-api-key": "nope"}),
    ]
    statuses = set()
    for response in responses:
        statuses.add(response.status_code)
        assert response.headers["content-type"].startswith("application/json"), response
        charset = response.headers["content-type"].lower()
        assert "charset" not in charset or "utf-8" in charset
        response.json()
    assert statuses == {200, 400, 401, 404, 405}


def test_unknown_object_type_is_404_object_not_found(client: TestClient) -> None:
    for method, path, body in [
        ("PUT", "/api/objects/widgets", {"name": "x"}),
        ("POST", "/api/objects/widgets/batch", {"objects": []}),
        ("POST", "/api/objects/widgets", {"id": 1, "fieldName": "a", "fieldValue": 1}),
        ("DELETE", "/api/objects/widgets", {"id": 1}),
        ("GET", "/api/objects/widgets", None),
    ]:
        response = client.request(method, path, json=body)
        assert response.status_code == 404, (method, path)
        assert err(response) == "Object not found"


def test_singular_slugs_are_accepted(client: TestClient) -> None:
    for slug, kind in [("contact", "contacts"), ("company", "companies"), ("deal", "deals")]:
        fields = {"stage": "won"} if kind == "deals" else {}
        response = client.put(f"/api/objects/{slug}", json={"name": "S", "fields": fields})
        assert response.status_code == 200, response.text
        record_id = response.json()["data"]["id"]
        got = client.get(f"/api/objects/{kind}", params={"id": record_id})
        assert got.status_code == 200
        assert got.json()["data"]["name"] == "S"


def test_unknown_query_parameters_are_ignored(client: TestClient) -> None:
    response = client.get(
        "/api/objects/contacts", params={"include_all_fields": "true", "include_summary": "1"}
    )
    assert response.status_code == 200
    assert response.json()["data"] == []


def test_chunked_body_over_5_mib_is_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "'
        for _ in range(6):
            yield b"a" * (1024 * 1024)
        yield b'"}'

    response = client.put("/api/objects/contacts", content=chunks())
    assert response.status_code == 413
    assert err(response) == "Request body too large"
    assert response.headers["content-type"].startswith("application/json")


def test_two_api_key_headers_are_401(nokey: TestClient) -> None:
    for pair in ([KEY, KEY], [KEY, "sk_live_other"], ["sk_live_other", KEY]):
        headers = [("x-api-key", value) for value in pair]
        response = nokey.get("/api/meta/schema", headers=headers)
        assert response.status_code == 401, pair
        assert err(response) == "Invalid API key"

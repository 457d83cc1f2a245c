"""``quirks="hosted"``: the sandbox answers as the hosted service is known to, over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from recordsync.sandbox import create_app

from .conftest import KEY


@pytest.fixture
def hosted(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(str(tmp_path / "s.db"), api_key=KEY, quirks="hosted")
    with TestClient(
        app, headers={"x-api-key": KEY}, follow_redirects=False, raise_server_exceptions=False
    ) as client:
        yield client


@pytest.mark.parametrize("key", [None, "sk_live_wrong"])
def test_a_bad_key_is_a_redirect_to_a_login_page(hosted: TestClient, key: str | None) -> None:
    hosted.headers.pop("x-api-key")
    headers = {"x-api-key": key} if key else {}
    for method, path in (("GET", "/api/meta/schema"), ("POST", "/api/objects/contacts/batch")):
        response = hosted.request(method, path, headers=headers, json={"objects": []})
        assert response.status_code == 307
        assert response.headers["location"] == "/login"
        assert response.headers["content-type"].startswith("text/html")


def test_delete_is_204_with_no_body(hosted: TestClient) -> None:
    record = hosted.put("/api/objects/deals", json={"name": "D", "fields": {"stage": "won"}})
    rid = int(record.json()["data"]["id"])
    response = hosted.request("DELETE", "/api/objects/deals", json={"id": rid})
    assert response.status_code == 204
    assert response.content == b""
    assert hosted.get("/api/objects/deals", params={"id": rid}).status_code == 404
    again = hosted.request("DELETE", "/api/objects/deals", json={"id": rid})
    assert again.status_code == 404 and again.json() == {"error": "Object not found"}


def test_answers_carry_extra_keys_and_string_ids(hosted: TestClient) -> None:
    batch = hosted.post(
        "/api/objects/contacts/batch",
        json={"objects": [{"name": "A", "fields": {"email": "a@x.example"}}, {"fields": {}}]},
    ).json()
    assert set(batch) == {"results", "summary", "request_id"}
    ok, failed = batch["results"]
    assert isinstance(ok["id"], str) and ok["id"].isdigit()
    assert ok["object_type"] == "contacts" and ok["status"] == "created"
    assert failed["id"] is None and failed["status"] == "failed"
    assert batch["summary"] == {"total": 2, "created": 1, "updated": 0, "failed": 1, "skipped": 0}
    one = hosted.get("/api/objects/contacts", params={"id": ok["id"]}).json()
    assert one["data"]["id"] == ok["id"] and one["data"]["workspace_id"]
    page = hosted.get("/api/objects/contacts").json()
    assert page["data"][0]["id"] == ok["id"] and "request_id" in page
    assert page["pagination"]["total"] == 1


def test_errors_and_stored_values_are_unchanged(hosted: TestClient, tmp_path: Path) -> None:
    bad = hosted.put("/api/objects/contacts", json={"name": "A", "fields": {"email": "x"}})
    assert bad.status_code == 400
    assert bad.json() == {"error": "Validation failed: email: invalid email format"}
    hosted.put("/api/objects/contacts", json={"name": "B", "fields": {"email": "b@x.example"}})
    plain = create_app(str(tmp_path / "s.db"), api_key=KEY)
    with TestClient(plain, headers={"x-api-key": KEY}) as client:
        record = client.get("/api/objects/contacts").json()["data"][0]
    assert isinstance(record["id"], int) and "workspace_id" not in record


def test_unknown_quirks_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown quirks mode 'cloud'"):
        create_app(str(tmp_path / "s.db"), api_key=KEY, quirks="cloud")

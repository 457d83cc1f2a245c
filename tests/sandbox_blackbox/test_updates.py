"""Legacy single-field POST, PATCH, DELETE, relationships and timestamps."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from .conftest import batch, create, delete, err, fetch


def parse(stamp: str) -> datetime:
    assert stamp.endswith("Z")
    return datetime.fromisoformat(stamp)


def legacy(client: TestClient, object_type: str, body: Any) -> Any:
    return client.post(f"/api/objects/{object_type}", json=body)


def patch(client: TestClient, object_type: str, body: Any) -> Any:
    return client.patch(f"/api/objects/{object_type}", json=body)


def remove(client: TestClient, object_type: str, body: Any) -> Any:
    return client.request("DELETE", f"/api/objects/{object_type}", json=body)


# --- legacy POST -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("object_type", "kind", "field", "value", "extra"),
    [
        ("contacts", "contact", "job_title", "CTO", {}),
        ("contact", "contact", "lead_score", 7, {}),
        ("companies", "company", "industry", "retail", {}),
        ("deals", "deal", "amount", 12.5, {"stage": "won"}),
    ],
)
def test_legacy_update_message_and_record(
    client: TestClient, object_type: str, kind: str, field: str, value: Any, extra: dict[str, Any]
) -> None:
    record = create(client, object_type, "R", **extra)
    response = legacy(
        client, object_type, {"id": record["id"], "fieldName": field, "fieldValue": value}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "message"}
    assert body["message"] == f"Updated custom field '{field}' for {kind}"
    assert body["data"]["id"] == record["id"]
    assert body["data"][field] == value
    assert body["data"]["name"] == "R"


def test_legacy_accepts_system_fields(client: TestClient) -> None:
    record = create(client, "companies", "Acme")
    response = legacy(
        client,
        "companies",
        {"id": record["id"], "fieldName": "domain", "fieldValue": "acme.example"},
    )
    assert response.status_code == 200
    assert response.json()["message"] == "Updated custom field 'domain' for company"
    assert fetch(client, "companies", record["id"])["domain"] == "acme.example"


def test_legacy_null_is_a_value(client: TestClient) -> None:
    record = create(client, "contacts", "R", job_title="CTO")
    response = legacy(
        client, "contacts", {"id": record["id"], "fieldName": "job_title", "fieldValue": None}
    )
    assert response.status_code == 200
    assert response.json()["data"]["job_title"] is None


def test_legacy_requires_field_name_and_value(client: TestClient) -> None:
    record = create(client, "contacts", "R")
    response = legacy(client, "contacts", {"id": record["id"], "fieldValue": "x"})
    assert response.status_code == 400
    assert "fieldName" in err(response)
    response = legacy(client, "contacts", {"id": record["id"], "fieldName": "job_title"})
    assert response.status_code == 400
    assert "fieldValue" in err(response)


def test_legacy_by_email_and_id_wins(client: TestClient) -> None:
    a = create(client, "contacts", "A", email="a@example.org")
    b = create(client, "contacts", "B", email="b@example.org")
    response = legacy(
        client,
        "contacts",
        {"email": "b@example.org", "fieldName": "job_title", "fieldValue": "by email"},
    )
    assert response.status_code == 200
    assert response.json()["data"]["id"] == b["id"]
    response = legacy(
        client,
        "contacts",
        {"id": a["id"], "email": "b@example.org", "fieldName": "job_title", "fieldValue": "by id"},
    )
    assert response.status_code == 200
    assert response.json()["data"]["id"] == a["id"]
    assert fetch(client, "contacts", a["id"])["job_title"] == "by id"
    assert fetch(client, "contacts", b["id"])["job_title"] == "by email"


@pytest.mark.parametrize(
    ("object_type", "body"),
    [
        ("contacts", {"fieldName": "job_title", "fieldValue": "x"}),
        ("contacts", {"id": None, "fieldName": "job_title", "fieldValue": "x"}),
        ("companies", {"fieldName": "industry", "fieldValue": "retail"}),
        ("companies", {"email": "a@b.example", "fieldName": "industry", "fieldValue": "retail"}),
        ("deals", {"fieldName": "stage", "fieldValue": "won"}),
    ],
)
def test_legacy_without_id(client: TestClient, object_type: str, body: Any) -> None:
    response = legacy(client, object_type, body)
    assert response.status_code == 400
    assert err(response) == "Validation failed: id: required"


def test_legacy_not_found_and_validation(client: TestClient) -> None:
    response = legacy(
        client, "contacts", {"id": 999999, "fieldName": "job_title", "fieldValue": "x"}
    )
    assert response.status_code == 404
    assert err(response) == "Object not found"
    response = legacy(
        client,
        "contacts",
        {"email": "ghost@example.org", "fieldName": "job_title", "fieldValue": "x"},
    )
    assert response.status_code == 404
    assert err(response) == "Object not found"
    record = create(client, "contacts", "R")
    response = legacy(
        client, "contacts", {"id": record["id"], "fieldName": "lead_score", "fieldValue": 1000}
    )
    assert response.status_code == 400
    assert err(response) == "Validation failed: lead_score: must be <= 100"
    response = legacy(
        client, "contacts", {"id": record["id"], "fieldName": "shoe_size", "fieldValue": 44}
    )
    assert response.status_code == 400
    assert err(response) == "Validation failed: shoe_size: unknown field"
    delete(client, "contacts", record["id"])
    response = legacy(
        client, "contacts", {"id": record["id"], "fieldName": "job_title", "fieldValue": "x"}
    )
    assert response.status_code == 404
    assert err(response) == "Object not found"


# --- PATCH -------------------------------------------------------------------------------


def test_patch_updates_only_given_keys(client: TestClient) -> None:
    record = create(client, "contacts", "Old", job_title="Keep", lead_score=1)
    response = patch(client, "contacts", {"id": record["id"], "fields": {"lead_score": 9}})
    assert response.status_code == 200
    assert set(response.json()) == {"data"}
    data = response.json()["data"]
    assert data["name"] == "Old" and data["job_title"] == "Keep" and data["lead_score"] == 9
    response = patch(client, "contacts", {"id": record["id"], "fields": {"job_title": None}})
    assert response.status_code == 200
    assert response.json()["data"]["job_title"] is None
    response = patch(client, "contacts", {"id": record["id"], "fields": {"job_title": "Keep"}})
    response = patch(client, "contacts", {"id": record["id"], "name": "New"})
    assert response.json()["data"]["name"] == "New"
    assert response.json()["data"]["lead_score"] == 9
    response = patch(
        client, "contacts", {"id": record["id"], "profile_image_url": "https://i.example/x.png"}
    )
    assert response.json()["data"]["profile_image_url"] == "https://i.example/x.png"
    assert fetch(client, "contacts", record["id"]) == response.json()["data"]


def test_patch_nothing_to_update(client: TestClient) -> None:
    record = create(client, "contacts", "R")
    for body in ({"id": record["id"]}, {"id": record["id"], "fields": {}}):
        response = patch(client, "contacts", body)
        assert response.status_code == 400
        assert err(response) == "Validation failed: fields: nothing to update"


def test_patch_by_email_for_contacts(client: TestClient) -> None:
    record = create(client, "contacts", "R", email="r@example.org")
    response = patch(client, "contacts", {"email": "r@example.org", "fields": {"lead_score": 3}})
    assert response.status_code == 200
    assert response.json()["data"]["id"] == record["id"]
    assert fetch(client, "contacts", record["id"])["lead_score"] == 3
    response = patch(client, "contacts", {"email": "ghost@example.org", "name": "G"})
    assert response.status_code == 404
    assert err(response) == "Object not found"


def test_patch_errors(client: TestClient) -> None:
    record = create(client, "contacts", "R")
    response = patch(client, "contacts", {"fields": {"lead_score": 3}})
    assert response.status_code == 400
    assert err(response) == "Validation failed: id: required"
    response = patch(client, "contacts", {"id": None, "fields": {"lead_score": 3}})
    assert err(response) == "Validation failed: id: required"
    response = patch(client, "contacts", {"id": 999999, "fields": {"lead_score": 3}})
    assert response.status_code == 404
    assert err(response) == "Object not found"
    response = patch(client, "contacts", {"id": record["id"], "fields": {"email": "bad"}})
    assert response.status_code == 400
    assert err(response) == "Validation failed: email: invalid email format"
    response = patch(client, "contacts", {"id": record["id"], "profile_image_url": "ftp://x/y"})
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: profile_image_url: ")
    response = patch(client, "contacts", {"id": record["id"], "name": ""})
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: name: ")
    delete(client, "contacts", record["id"])
    response = patch(client, "contacts", {"id": record["id"], "fields": {"lead_score": 3}})
    assert response.status_code == 404
    assert err(response) == "Object not found"


# --- DELETE ------------------------------------------------------------------------------


def test_delete_is_soft(client: TestClient) -> None:
    record = create(client, "contacts", "R")
    response = remove(client, "contacts", {"id": record["id"]})
    assert response.status_code == 200
    assert response.json() == {"success": True}
    response = client.get("/api/objects/contacts", params={"id": record["id"]})
    assert response.status_code == 404
    assert err(response) == "Object not found"
    assert client.get("/api/objects/contacts").json()["data"] == []
    listing = client.get("/api/objects/contacts", params={"include_deleted": "true"}).json()
    assert [r["id"] for r in listing["data"]] == [record["id"]]
    assert listing["data"][0]["deleted_at"] is not None
    response = remove(client, "contacts", {"id": record["id"]})
    assert response.status_code == 404
    assert err(response) == "Object not found"


@pytest.mark.parametrize("body", [{}, {"id": None}, {"name": "x"}])
def test_delete_without_id(client: TestClient, body: Any) -> None:
    response = remove(client, "contacts", body)
    assert response.status_code == 400
    assert err(response) == "Validation failed: id: required"


def test_delete_unknown_or_other_type(client: TestClient) -> None:
    response = remove(client, "contacts", {"id": 999999})
    assert response.status_code == 404
    assert err(response) == "Object not found"
    company = create(client, "companies", "Acme")
    response = remove(client, "contacts", {"id": company["id"]})
    assert response.status_code == 404
    assert fetch(client, "companies", company["id"])["name"] == "Acme"


def test_relationships_nulled_after_target_deleted(client: TestClient) -> None:
    company = create(client, "companies", "Acme")
    contact = create(client, "contacts", "C", company_id=company["id"])
    deal = create(client, "deals", "D", stage="won", company_id=company["id"])
    assert contact["company_id"] == company["id"]
    delete(client, "companies", company["id"])
    assert fetch(client, "contacts", contact["id"])["company_id"] is None
    assert fetch(client, "deals", deal["id"])["company_id"] is None
    listed = client.get("/api/objects/contacts").json()["data"]
    assert listed[0]["company_id"] is None
    response = client.put(
        "/api/objects/contacts", json={"name": "C2", "fields": {"company_id": company["id"]}}
    )
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: company_id: ")


# --- timestamps --------------------------------------------------------------------------


def test_updated_at_changes_on_every_write(client: TestClient) -> None:
    record = create(client, "contacts", "R", email="r@example.org")
    seen = [record["updated_at"]]
    writes = [
        lambda: patch(client, "contacts", {"id": record["id"], "fields": {"lead_score": 1}}),
        lambda: patch(client, "contacts", {"id": record["id"], "fields": {"lead_score": 1}}),
        lambda: legacy(
            client, "contacts", {"id": record["id"], "fieldName": "lead_score", "fieldValue": 1}
        ),
        lambda: client.put(
            "/api/objects/contacts", json={"name": "R", "fields": {"email": "r@example.org"}}
        ),
        lambda: client.post(
            "/api/objects/contacts/batch",
            json={"objects": [{"name": "R", "match_by": "id", "match_value": record["id"]}]},
        ),
    ]
    for write in writes:
        response = write()
        assert response.status_code == 200, response.text
        current = fetch(client, "contacts", record["id"])
        assert current["created_at"] == record["created_at"]
        assert parse(current["updated_at"]) > parse(seen[-1])
        seen.append(current["updated_at"])
    assert len(set(seen)) == len(seen)


def test_failed_write_keeps_record(client: TestClient) -> None:
    record = create(client, "contacts", "R", lead_score=1)
    response = patch(client, "contacts", {"id": record["id"], "fields": {"lead_score": 1000}})
    assert response.status_code == 400
    assert fetch(client, "contacts", record["id"]) == record
    body = batch(
        client,
        "contacts",
        [
            {
                "name": "R2",
                "match_by": "id",
                "match_value": record["id"],
                "fields": {"lead_score": "x"},
            }
        ],
    )
    assert body["results"][0]["status"] == "failed"
    assert fetch(client, "contacts", record["id"]) == record

"""POST /api/objects/{type}/batch."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from .conftest import batch, create, delete, err, fetch


def post(client: TestClient, object_type: str, body: Any) -> Any:
    return client.post(f"/api/objects/{object_type}/batch", json=body)


def check_summary(body: dict[str, Any]) -> None:
    results = body["results"]
    summary = body["summary"]
    assert set(summary) == {"total", "created", "updated", "failed"}
    assert summary["total"] == len(results)
    for status in ("created", "updated", "failed"):
        assert summary[status] == sum(1 for r in results if r["status"] == status)
    for result in results:
        if result["status"] == "failed":
            assert set(result) == {"id", "status", "error"}
            assert result["id"] is None
            assert isinstance(result["error"], str) and result["error"]
        else:
            assert set(result) == {"id", "status"}, result
            assert isinstance(result["id"], int)


def test_creates_in_input_order(client: TestClient) -> None:
    names = [f"Contact {i}" for i in range(10)]
    body = batch(client, "contacts", [{"name": n} for n in names])
    check_summary(body)
    assert set(body) == {"results", "summary"}
    assert body["summary"] == {"total": 10, "created": 10, "updated": 0, "failed": 0}
    ids = [r["id"] for r in body["results"]]
    assert [fetch(client, "contacts", i)["name"] for i in ids] == names
    assert len(set(ids)) == 10


def test_empty_objects(client: TestClient) -> None:
    body = batch(client, "contacts", [])
    assert body == {"results": [], "summary": {"total": 0, "created": 0, "updated": 0, "failed": 0}}


def test_exactly_100_is_accepted(client: TestClient) -> None:
    body = batch(
        client, "deals", [{"name": f"D{i}", "fields": {"stage": "won"}} for i in range(100)]
    )
    assert body["summary"] == {"total": 100, "created": 100, "updated": 0, "failed": 0}


def test_more_than_100_is_rejected(client: TestClient) -> None:
    response = post(client, "contacts", {"objects": [{"name": "x"}] * 101})
    assert response.status_code == 400
    assert err(response) == "Batch size exceeds maximum of 100. Received 101 objects."
    response = post(client, "contacts", {"objects": [{"name": "x"}] * 250})
    assert err(response) == "Batch size exceeds maximum of 100. Received 250 objects."
    assert client.get("/api/objects/contacts").json()["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "body",
    [{}, {"objects": None}, {"objects": "x"}, {"objects": {"name": "x"}}, {"items": []}],
)
def test_missing_objects_array(client: TestClient, body: Any) -> None:
    response = post(client, "contacts", body)
    assert response.status_code == 400
    assert err(response) == 'Request body must contain an "objects" array'


def test_per_entry_failures_do_not_abort(client: TestClient) -> None:
    existing = create(client, "contacts", "Existing")
    entries: list[Any] = [
        {"name": "Good 1"},
        "not an object",
        {"fields": {"job_title": "no name"}},
        {"name": ""},
        {"name": None},
        {"name": "Bad match", "match_by": "phone", "match_value": "1"},
        {"name": "No value", "match_by": "id"},
        {"name": "Null value", "match_by": "id", "match_value": None},
        {"name": "Bad email", "fields": {"email": "nope"}},
        {"name": "Unknown", "fields": {"nope": 1}},
        {"name": "Good 2", "match_by": "id", "match_value": existing["id"]},
        42,
        None,
        {"name": "Good 3"},
    ]
    body = batch(client, "contacts", entries)
    check_summary(body)
    statuses = [r["status"] for r in body["results"]]
    assert statuses == ["created"] + ["failed"] * 9 + ["updated", "failed", "failed", "created"]
    assert body["summary"] == {"total": 14, "created": 2, "updated": 1, "failed": 11}
    errors = [r.get("error", "") for r in body["results"]]
    assert "name" in errors[2] and "name" in errors[3] and "name" in errors[4]
    assert "match_by" in errors[5]
    assert "match_value" in errors[6] and "match_value" in errors[7]
    assert errors[8] == "Validation failed: email: invalid email format"
    assert errors[9] == "Validation failed: nope: unknown field"
    assert fetch(client, "contacts", existing["id"])["name"] == "Good 2"


def test_match_by_email_on_non_contacts_fails(client: TestClient) -> None:
    for object_type in ("companies", "deals"):
        body = batch(
            client,
            object_type,
            [
                {
                    "name": "X",
                    "match_by": "email",
                    "match_value": "a@b.example",
                    "fields": {"stage": "won"} if object_type == "deals" else {},
                }
            ],
        )
        check_summary(body)
        assert body["results"][0]["status"] == "failed"
        assert "email" in body["results"][0]["error"]


def test_match_by_email_on_contacts(client: TestClient) -> None:
    existing = create(client, "contacts", "Ada", email="ada@example.org")
    body = batch(
        client,
        "contacts",
        [
            {"name": "Ada L", "match_by": "email", "match_value": "ada@example.org"},
            {"name": "New", "match_by": "email", "match_value": "new@example.org"},
        ],
    )
    check_summary(body)
    assert body["results"][0] == {"id": existing["id"], "status": "updated"}
    assert body["results"][1]["status"] == "created"
    assert fetch(client, "contacts", existing["id"])["name"] == "Ada L"


def test_match_by_id_int_or_numeric_string(client: TestClient) -> None:
    deal = create(client, "deals", "Deal", stage="won", amount=10)
    body = batch(
        client,
        "deals",
        [
            {"name": "By int", "match_by": "id", "match_value": deal["id"]},
            {
                "name": "By string",
                "match_by": "id",
                "match_value": str(deal["id"]),
                "fields": {"amount": 20},
            },
        ],
    )
    check_summary(body)
    assert body["results"] == [
        {"id": deal["id"], "status": "updated"},
        {"id": deal["id"], "status": "updated"},
    ]
    record = fetch(client, "deals", deal["id"])
    assert record["name"] == "By string"
    assert record["amount"] == 20
    assert record["stage"] == "won"


def test_match_by_id_without_hit_creates(client: TestClient) -> None:
    deal = create(client, "deals", "Gone", stage="won")
    delete(client, "deals", deal["id"])
    body = batch(
        client,
        "deals",
        [
            {
                "name": "Missing",
                "match_by": "id",
                "match_value": 999999,
                "fields": {"stage": "won"},
            },
            {
                "name": "Deleted",
                "match_by": "id",
                "match_value": deal["id"],
                "fields": {"stage": "lost"},
            },
        ],
    )
    check_summary(body)
    assert [r["status"] for r in body["results"]] == ["created", "created"]
    assert deal["id"] not in [r["id"] for r in body["results"]]


def test_match_by_id_of_another_type_does_not_update_it(client: TestClient) -> None:
    contact = create(client, "contacts", "Contact")
    body = batch(
        client,
        "deals",
        [{"name": "D", "match_by": "id", "match_value": contact["id"], "fields": {"stage": "won"}}],
    )
    check_summary(body)
    assert body["results"][0]["id"] != contact["id"]
    assert fetch(client, "contacts", contact["id"])["name"] == "Contact"


def test_match_by_name_exact_case_sensitive_lowest_id(client: TestClient) -> None:
    first = create(client, "deals", "Acme deal", stage="won")
    second = create(client, "deals", "Acme deal", stage="won")
    body = batch(
        client,
        "deals",
        [
            {
                "name": "Acme deal",
                "match_by": "name",
                "match_value": "Acme deal",
                "fields": {"stage": "lost"},
            },
            {
                "name": "acme deal",
                "match_by": "name",
                "match_value": "acme deal",
                "fields": {"stage": "won"},
            },
        ],
    )
    check_summary(body)
    assert body["results"][0] == {"id": first["id"], "status": "updated"}
    assert body["results"][1]["status"] == "created"
    assert body["results"][1]["id"] not in (first["id"], second["id"])
    assert fetch(client, "deals", first["id"])["stage"] == "lost"
    assert fetch(client, "deals", second["id"])["stage"] == "won"


def test_match_by_name_ignores_deleted(client: TestClient) -> None:
    first = create(client, "deals", "Same", stage="won")
    second = create(client, "deals", "Same", stage="won")
    delete(client, "deals", first["id"])
    body = batch(client, "deals", [{"name": "Same", "match_by": "name", "match_value": "Same"}])
    assert body["results"] == [{"id": second["id"], "status": "updated"}]


def test_matched_record_updated_with_name_fields_and_image(client: TestClient) -> None:
    contact = create(client, "contacts", "Old", job_title="Keep", lead_score=1)
    body = batch(
        client,
        "contacts",
        [
            {
                "name": "New",
                "match_by": "id",
                "match_value": contact["id"],
                "fields": {"lead_score": 2},
                "profile_image_url": "https://img.example/a.png",
            }
        ],
    )
    assert body["results"] == [{"id": contact["id"], "status": "updated"}]
    record = fetch(client, "contacts", contact["id"])
    assert record["name"] == "New"
    assert record["lead_score"] == 2
    assert record["job_title"] == "Keep"
    assert record["profile_image_url"] == "https://img.example/a.png"


def test_later_entries_see_earlier_ones(client: TestClient) -> None:
    body = batch(
        client,
        "deals",
        [
            {"name": "Fresh", "fields": {"stage": "won"}},
            {"name": "Fresh renamed", "match_by": "name", "match_value": "Fresh"},
        ],
    )
    check_summary(body)
    created, updated = body["results"]
    assert created["status"] == "created"
    assert updated == {"id": created["id"], "status": "updated"}
    assert fetch(client, "deals", created["id"])["name"] == "Fresh renamed"


def test_required_field_only_on_create(client: TestClient) -> None:
    deal = create(client, "deals", "D", stage="won")
    body = batch(
        client,
        "deals",
        [
            {"name": "No stage"},
            {"name": "Update", "match_by": "id", "match_value": deal["id"]},
        ],
    )
    check_summary(body)
    assert body["results"][0]["status"] == "failed"
    assert body["results"][0]["error"].startswith("Validation failed: stage: ")
    assert body["results"][1] == {"id": deal["id"], "status": "updated"}


def test_batch_relationship_to_earlier_entry_and_deleted(client: TestClient) -> None:
    company = create(client, "companies", "Gone Inc")
    delete(client, "companies", company["id"])
    created = batch(client, "companies", [{"name": "Live Co"}])["results"][0]
    body = batch(
        client,
        "contacts",
        [
            {"name": "A", "fields": {"company_id": created["id"]}},
            {"name": "B", "fields": {"company_id": company["id"]}},
        ],
    )
    check_summary(body)
    assert body["results"][0]["status"] == "created"
    assert body["results"][1]["status"] == "failed"
    assert body["results"][1]["error"].startswith("Validation failed: company_id: ")


def test_batch_invalid_json(client: TestClient) -> None:
    response = client.post("/api/objects/contacts/batch", content=b"{nope")
    assert response.status_code == 400
    assert err(response) == "Invalid JSON body"


def test_batch_via_singular_slug(client: TestClient) -> None:
    body = batch(client, "contact", [{"name": "Singular"}])
    assert body["summary"]["created"] == 1

"""Record operations over HTTP: create, validation, dedup, legacy update, PATCH, DELETE,
soft delete, relationships, fetch-one and list."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .support import ADA, TestClient, created, delete, put

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def test_create_returns_the_flat_record(client: TestClient) -> None:
    r = put(
        client,
        "contacts",
        "Ada",
        email="  Ada@Example.COM ",
        lead_score=42,
        tags=["vip", "partner"],
        owned_by_user_id=ADA,
        newsletter_opt_in=True,
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    rec = r.json()["data"]
    assert list(rec)[:6] == [
        "id",
        "name",
        "created_at",
        "updated_at",
        "owned_by_user_id",
        "profile_image_url",
    ]
    assert rec["email"] == "ada@example.com" and rec["lead_score"] == 42
    assert rec["tags"] == ["vip", "partner"] and rec["owned_by_user_id"] == ADA
    assert rec["phone"] is None and rec["company_id"] is None and "deleted_at" not in rec
    assert STAMP.match(rec["created_at"]) and STAMP.match(rec["updated_at"])


def test_singular_slugs_and_unknown_type(client: TestClient) -> None:
    assert put(client, "contact", "A").status_code == 200
    assert put(client, "company", "B").status_code == 200
    assert put(client, "deal", "C", stage="won").status_code == 200
    r = put(client, "tickets", "D")
    assert (r.status_code, r.json()) == (404, {"error": "Object not found"})


def test_record_ids_are_unique_across_types(client: TestClient) -> None:
    ids = [
        created(client, t, "X", **f)["id"]
        for t, f in (
            ("contacts", {}),
            ("companies", {}),
            ("deals", {"stage": "won"}),
            ("contacts", {}),
        )
    ]
    assert len(set(ids)) == 4


@pytest.mark.parametrize(
    ("object_type", "name", "fields", "message"),
    [
        ("contacts", None, {}, "name: required"),
        ("contacts", "", {}, "name: required"),
        ("contacts", 5, {}, "name: must be a string"),
        ("contacts", "A", {"email": "nope"}, "email: invalid email format"),
        ("contacts", "A", {"colour": "red"}, "colour: unknown field"),
        (
            "contacts",
            "A",
            {"lifecycle_stage": "Won"},
            "lifecycle_stage: 'Won' is not an option (lead, qualified, customer, churned)",
        ),
        ("contacts", "A", {"lead_score": "10"}, "lead_score: must be a number"),
        ("contacts", "A", {"lead_score": 101}, "lead_score: must be <= 100"),
        ("contacts", "A", {"lead_score": -1}, "lead_score: must be >= 0"),
        ("contacts", "A", {"lead_score": 1.5}, "lead_score: must have at most 0 decimal places"),
        ("contacts", "A", {"newsletter_opt_in": "yes"}, "newsletter_opt_in: must be true or false"),
        (
            "contacts",
            "A",
            {"last_contacted": "2024-02-30"},
            "last_contacted: must be a date (YYYY-MM-DD)",
        ),
        (
            "contacts",
            "A",
            {"signed_up_at": "yesterday"},
            "signed_up_at: must be an ISO 8601 date-time",
        ),
        ("contacts", "A", {"owned_by_user_id": "nobody"}, "owned_by_user_id: unknown user"),
        ("contacts", "A", {"company_id": 42}, "company_id: no companies record 42"),
        ("contacts", "A", {"company_id": "42"}, "company_id: must be a record id (integer)"),
        ("contacts", "A", {"tags": "vip"}, "tags: must be an array of options"),
        (
            "contacts",
            "A",
            {"tags": ["vip", "gold"]},
            "tags: 'gold' is not an option (vip, partner, churn-risk, newsletter)",
        ),
        (
            "contacts",
            "A",
            {"website": "ftp://x.example"},
            "website: invalid URL (must be http or https)",
        ),
        ("contacts", "A", {"phone": "call me"}, "phone: invalid phone number"),
        (
            "companies",
            "A",
            {"annual_revenue": 1.005},
            "annual_revenue: must have at most 2 decimal places",
        ),
        ("deals", "A", {}, "stage: required"),
        ("deals", "A", {"stage": None}, "stage: required"),
        ("deals", "A", {"stage": "won", "probability": 101}, "probability: must be <= 100"),
        ("deals", "", {"amount": "x"}, "name: required"),  # name first
        ("deals", "A", {"amount": "x", "colour": 1}, "amount: must be a number"),  # request order
        ("deals", "A", {"colour": 1, "amount": "x"}, "colour: unknown field"),
    ],
)
def test_validation_messages(
    client: TestClient, object_type: str, name: Any, fields: dict[str, Any], message: str
) -> None:
    r = client.put(f"/api/objects/{object_type}", json={"name": name, "fields": fields})
    assert (r.status_code, r.json()) == (400, {"error": f"Validation failed: {message}"})
    assert client.get(f"/api/objects/{object_type}").json()["pagination"]["total"] == 0


def test_values_accepted_and_stored(client: TestClient) -> None:
    rec = created(
        client,
        "contacts",
        "A",
        signed_up_at="2026-01-02T03:04:05+02:00",
        last_contacted="2026-01-02",
        lead_score=7.0,
        phone="+1 (555) 010-2030",
        website="https://acme.example/x",
    )
    assert rec["signed_up_at"] == "2026-01-02T01:04:05Z"
    assert rec["lead_score"] == 7 and rec["phone"] == "+1 (555) 010-2030"
    r = client.put("/api/objects/contacts", json={"name": "B", "profile_image_url": "nope"})
    assert r.json() == {
        "error": "Validation failed: profile_image_url: invalid URL (must be http or https)"
    }
    r = client.put(
        "/api/objects/contacts",
        json={"name": "B", "profile_image_url": "https://img.example/a.png"},
    )
    assert r.json()["data"]["profile_image_url"] == "https://img.example/a.png"


def test_contact_dedup_by_email_keeps_fields_not_given(client: TestClient) -> None:
    first = created(client, "contacts", "Ada", email="ada@x.example", job_title="CTO")
    again = created(client, "contacts", "Ada L.", email="  ADA@X.example", lead_score=3)
    assert again["id"] == first["id"]
    assert again["name"] == "Ada L." and again["job_title"] == "CTO" and again["lead_score"] == 3
    assert again["updated_at"] > first["updated_at"]
    assert client.get("/api/objects/contacts").json()["pagination"]["total"] == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"domain": "acme.com"}, {"domain": "https://www.ACME.com/about"}),
        (
            {"linkedin_url": "https://www.linkedin.com/company/acme/"},
            {"linkedin_url": "http://linkedin.com/company/ACME?trk=x"},
        ),
        ({}, {}),  # name similarity: "Acme, Inc." vs "ACME"
    ],
)
def test_company_dedup(client: TestClient, first: dict[str, Any], second: dict[str, Any]) -> None:
    a = created(client, "companies", "Acme, Inc.", **first)
    b = created(client, "companies", "ACME" if not second else "Other name", **second)
    assert a["id"] == b["id"]


def test_company_dedup_order_and_misses(client: TestClient) -> None:
    by_domain = created(client, "companies", "One", domain="one.example")
    by_name = created(client, "companies", "Two GmbH")
    # "Two" also matches "Two GmbH" by name, but the domain rule comes first
    hit = created(client, "companies", "Two", domain="one.example")
    assert hit["id"] == by_domain["id"]
    created(client, "companies", "One", domain="one.example")  # rename it back
    assert created(client, "companies", "two.")["id"] == by_name["id"]
    assert created(client, "companies", "Two Systems")["id"] not in (by_domain["id"], by_name["id"])
    assert created(client, "companies", "Inc")["id"] != created(client, "companies", "Co")["id"]


def test_custom_objects_never_dedup(client: TestClient) -> None:
    a = created(client, "deals", "Same", stage="won")
    b = created(client, "deals", "Same", stage="won")
    assert a["id"] != b["id"]


def test_single_field_update(client: TestClient) -> None:
    rec = created(client, "contacts", "A", email="a@x.example")
    r = client.post(
        "/api/objects/contacts",
        json={"fieldName": "job_title", "fieldValue": "CEO", "email": "A@x.example"},
    )
    assert r.status_code == 200
    assert r.json()["message"] == "Updated custom field 'job_title' for contact"
    assert r.json()["data"]["job_title"] == "CEO"
    r = client.post(
        "/api/objects/contacts",
        json={"fieldName": "job_title", "fieldValue": None, "id": rec["id"]},
    )
    assert r.json()["data"]["job_title"] is None
    deal = created(client, "deals", "D", stage="won")
    r = client.post(
        "/api/objects/deals", json={"fieldName": "stage", "fieldValue": "lost", "id": deal["id"]}
    )
    assert r.json()["message"] == "Updated custom field 'stage' for deal"
    co = created(client, "companies", "C")
    r = client.post(
        "/api/objects/companies",
        json={"fieldName": "industry", "fieldValue": "retail", "id": co["id"]},
    )
    assert r.json()["message"] == "Updated custom field 'industry' for company"


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"fieldValue": 1, "id": 1}, 400, "Validation failed: fieldName: required"),
        ({"fieldName": "job_title", "id": 1}, 400, "Validation failed: fieldValue: required"),
        ({"fieldName": "job_title", "fieldValue": "x"}, 400, "Validation failed: id: required"),
        (
            {"fieldName": "job_title", "fieldValue": "x", "id": None},
            400,
            "Validation failed: id: required",
        ),
        ({"fieldName": "job_title", "fieldValue": "x", "id": 999}, 404, "Object not found"),
        (
            {"fieldName": "job_title", "fieldValue": "x", "email": "no@x.example"},
            404,
            "Object not found",
        ),
        (
            {"fieldName": "colour", "fieldValue": "x", "id": 1},
            400,
            "Validation failed: colour: unknown field",
        ),
        (
            {"fieldName": "lead_score", "fieldValue": 500, "id": 1},
            400,
            "Validation failed: lead_score: must be <= 100",
        ),
    ],
)
def test_single_field_update_failures(
    client: TestClient, body: dict[str, Any], status: int, error: str
) -> None:
    created(client, "contacts", "A", email="a@x.example")
    r = client.post("/api/objects/contacts", json=body)
    assert (r.status_code, r.json()) == (status, {"error": error})


def test_single_field_update_id_wins_and_email_only_for_contacts(client: TestClient) -> None:
    a = created(client, "contacts", "A", email="a@x.example")
    created(client, "contacts", "B", email="b@x.example")
    r = client.post(
        "/api/objects/contacts",
        json={"fieldName": "job_title", "fieldValue": "X", "id": a["id"], "email": "b@x.example"},
    )
    assert r.json()["data"]["id"] == a["id"]
    r = client.post(
        "/api/objects/companies",
        json={"fieldName": "industry", "fieldValue": "retail", "email": "a@x.example"},
    )
    assert r.json() == {"error": "Validation failed: id: required"}


def test_patch_updates_only_given_keys(client: TestClient) -> None:
    rec = created(client, "contacts", "A", email="a@x.example", job_title="CTO", lead_score=1)
    r = client.patch(
        "/api/objects/contacts",
        json={"id": rec["id"], "fields": {"lead_score": 2, "tags": ["vip"]}},
    )
    assert r.status_code == 200
    data = r.json()["data"]
    assert (data["name"], data["job_title"], data["lead_score"], data["tags"]) == (
        "A",
        "CTO",
        2,
        ["vip"],
    )
    r = client.patch("/api/objects/contacts", json={"email": "A@X.example", "name": "Renamed"})
    assert r.json()["data"]["name"] == "Renamed" and r.json()["data"]["lead_score"] == 2
    r = client.patch("/api/objects/contacts", json={"id": rec["id"], "fields": {}})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "Validation failed: fields: nothing to update"},
    )
    r = client.patch("/api/objects/contacts", json={"id": rec["id"]})
    assert r.status_code == 400
    r = client.patch("/api/objects/contacts", json={"id": None, "name": "x"})
    assert r.json() == {"error": "Validation failed: id: required"}
    r = client.patch("/api/objects/contacts", json={"id": 999, "name": "x"})
    assert (r.status_code, r.json()) == (404, {"error": "Object not found"})
    r = client.patch("/api/objects/contacts", json={"id": rec["id"], "fields": {"email": "x"}})
    assert r.json() == {"error": "Validation failed: email: invalid email format"}


def test_failed_request_changes_nothing(client: TestClient) -> None:
    rec = created(client, "contacts", "A", job_title="CTO")
    r = client.patch(
        "/api/objects/contacts",
        json={"id": rec["id"], "name": "B", "fields": {"job_title": "CEO", "lead_score": 1000}},
    )
    assert r.status_code == 400
    after = client.get(f"/api/objects/contacts?id={rec['id']}").json()["data"]
    assert after == rec


def test_updated_at_changes_on_every_write(client: TestClient) -> None:
    rec = created(client, "contacts", "A")
    stamps = [rec["updated_at"]]
    for _ in range(5):
        r = client.patch("/api/objects/contacts", json={"id": rec["id"], "name": "A"})
        stamps.append(r.json()["data"]["updated_at"])
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert r.json()["data"]["created_at"] == rec["created_at"]


def test_delete_is_soft(client: TestClient) -> None:
    rec = created(client, "contacts", "A", email="a@x.example")
    r = delete(client, "contacts", {"id": rec["id"]})
    assert (r.status_code, r.json()) == (200, {"success": True})
    gone = {"error": "Object not found"}
    assert delete(client, "contacts", {"id": rec["id"]}).json() == gone
    r = client.get(f"/api/objects/contacts?id={rec['id']}")
    assert (r.status_code, r.json()) == (404, gone)
    assert client.get("/api/objects/contacts?email=a@x.example").status_code == 404
    assert client.get("/api/objects/contacts").json()["data"] == []
    listed = client.get("/api/objects/contacts?include_deleted=true").json()["data"]
    assert listed[0]["id"] == rec["id"] and listed[0]["deleted_at"] is not None
    assert (
        client.patch("/api/objects/contacts", json={"id": rec["id"], "name": "B"}).status_code
        == 404
    )
    assert (
        client.post(
            "/api/objects/contacts",
            json={"fieldName": "job_title", "fieldValue": "x", "id": rec["id"]},
        ).status_code
        == 404
    )
    again = created(client, "contacts", "A", email="a@x.example")  # dedup ignores it
    assert again["id"] != rec["id"]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({}, 400, "Validation failed: id: required"),
        ({"id": None}, 400, "Validation failed: id: required"),
        ({"id": "1"}, 400, "Validation failed: id: must be an integer"),
        ({"id": 123456}, 404, "Object not found"),
        ({"id": 2**70}, 404, "Object not found"),
    ],
)
def test_delete_failures(client: TestClient, body: Any, status: int, error: str) -> None:
    r = delete(client, "contacts", body)
    assert (r.status_code, r.json()) == (status, {"error": error})


def test_delete_of_other_type_id_is_404(client: TestClient) -> None:
    co = created(client, "companies", "C")
    assert delete(client, "contacts", {"id": co["id"]}).status_code == 404


def test_relationships_to_deleted_records_read_as_null(client: TestClient) -> None:
    co = created(client, "companies", "C")
    contact = created(client, "contacts", "A", company_id=co["id"])
    deal = created(client, "deals", "D", stage="won", company_id=co["id"])
    assert contact["company_id"] == co["id"]
    delete(client, "companies", {"id": co["id"]})
    assert (
        client.get(f"/api/objects/contacts?id={contact['id']}").json()["data"]["company_id"] is None
    )
    assert client.get("/api/objects/deals").json()["data"][0]["company_id"] is None
    r = put(client, "deals", "E", stage="won", company_id=co["id"])
    assert r.json() == {"error": f"Validation failed: company_id: no companies record {co['id']}"}
    r = put(client, "deals", "E", stage="won", company_id=deal["id"])  # wrong type
    assert r.status_code == 400


def test_fetch_one(client: TestClient) -> None:
    a = created(client, "contacts", "A", email="a@x.example")
    b = created(client, "contacts", "B", email="b@x.example")
    assert client.get(f"/api/objects/contacts?id={a['id']}").json() == {"data": a}
    assert client.get("/api/objects/contacts?email=B@X.example").json()["data"]["id"] == b["id"]
    r = client.get(f"/api/objects/contacts?id={a['id']}&email=b@x.example")
    assert r.json()["data"]["id"] == a["id"]
    r = client.get("/api/objects/contacts?id=abc")
    assert (r.status_code, r.json()) == (
        400,
        {"error": "Validation failed: id: must be an integer"},
    )
    assert client.get("/api/objects/companies?email=a@x.example").status_code == 400
    assert client.get("/api/objects/contacts?id=99999").status_code == 404
    assert client.get(f"/api/objects/companies?id={a['id']}").status_code == 404

"""PUT create: record shape, validation per field type, defaults, required fields."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from .conftest import create, err, fetch, make_client

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
ADA = "6f1c2a3b-0001-4000-8000-000000000001"
DEFAULT_SEED = Path(__file__).resolve().parents[2] / "sample_data" / "seed.yaml"

CONTACT_FIELDS = {
    "email",
    "phone",
    "owned_by_user_id",
    "job_title",
    "lifecycle_stage",
    "lead_score",
    "newsletter_opt_in",
    "last_contacted",
    "company_id",
    "tags",
    "website",
    "signed_up_at",
}


def put(client: TestClient, object_type: str, body: Any) -> Any:
    return client.put(f"/api/objects/{object_type}", json=body)


def test_create_returns_flat_record_with_every_field(client: TestClient) -> None:
    response = put(client, "contacts", {"name": "Ada", "fields": {"job_title": "Engineer"}})
    assert response.status_code == 200
    assert set(response.json()) == {"data"}
    record = response.json()["data"]
    base = {"id", "name", "created_at", "updated_at", "owned_by_user_id", "profile_image_url"}
    assert base | CONTACT_FIELDS <= set(record)
    assert "deleted_at" not in record
    assert isinstance(record["id"], int)
    assert record["name"] == "Ada"
    assert record["job_title"] == "Engineer"
    for key in CONTACT_FIELDS - {"job_title"}:
        assert record[key] is None, key
    assert record["profile_image_url"] is None
    assert TIMESTAMP.match(record["created_at"])
    assert TIMESTAMP.match(record["updated_at"])
    assert fetch(client, "contacts", record["id"]) == record


def test_company_and_custom_records_carry_their_fields(client: TestClient) -> None:
    company = create(client, "companies", "Acme")
    for key in (
        "domain",
        "linkedin_url",
        "phone",
        "industry",
        "employee_count",
        "annual_revenue",
        "founded_on",
        "description",
        "owned_by_user_id",
    ):
        assert key in company and company[key] is None, key
    deal = create(client, "deals", "Big deal", stage="won")
    assert deal["stage"] == "won"
    for key in ("amount", "company_id", "close_date", "probability", "notes"):
        assert key in deal and deal[key] is None, key


def test_record_ids_are_unique_across_types(client: TestClient) -> None:
    ids = [
        create(client, "contacts", "A")["id"],
        create(client, "companies", "B")["id"],
        create(client, "deals", "C", stage="won")["id"],
        create(client, "contacts", "D")["id"],
    ]
    assert len(set(ids)) == 4


def test_name_is_required(client: TestClient) -> None:
    for body in ({}, {"fields": {"job_title": "x"}}, {"name": None}, {"name": ""}):
        response = put(client, "contacts", body)
        assert response.status_code == 400, body
        assert err(response) == "Validation failed: name: required"


def test_name_is_reported_before_fields(client: TestClient) -> None:
    response = put(client, "contacts", {"fields": {"email": "bad"}})
    assert err(response) == "Validation failed: name: required"


def test_first_failing_field_in_request_order_is_reported(client: TestClient) -> None:
    response = put(client, "contacts", {"name": "X", "fields": {"lead_score": 500, "email": "x"}})
    assert response.status_code == 400
    assert err(response) == "Validation failed: lead_score: must be <= 100"
    response = put(client, "contacts", {"name": "X", "fields": {"email": "x", "lead_score": 500}})
    assert err(response) == "Validation failed: email: invalid email format"


def test_unknown_field(client: TestClient) -> None:
    response = put(client, "contacts", {"name": "X", "fields": {"favourite_colour": "red"}})
    assert response.status_code == 400
    assert err(response) == "Validation failed: favourite_colour: unknown field"
    response = put(client, "companies", {"name": "X", "fields": {"email": "a@b.example"}})
    assert err(response) == "Validation failed: email: unknown field"


@pytest.mark.parametrize(
    ("object_type", "fields", "message"),
    [
        ("contacts", {"email": "not-an-email"}, "email: invalid email format"),
        ("contacts", {"email": "a@"}, "email: invalid email format"),
        (
            "contacts",
            {"lifecycle_stage": "Won"},
            "lifecycle_stage: 'Won' is not an option (lead, qualified, customer, churned)",
        ),
        (
            "deals",
            {"stage": "Won"},
            "stage: 'Won' is not an option (prospecting, proposal, negotiation, won, lost)",
        ),
        ("contacts", {"lead_score": "high"}, "lead_score: must be a number"),
        ("contacts", {"lead_score": True}, "lead_score: must be a number"),
        ("deals", {"stage": "won", "amount": "lots"}, "amount: must be a number"),
        ("contacts", {"lead_score": 101}, "lead_score: must be <= 100"),
        ("contacts", {"owned_by_user_id": "nobody"}, "owned_by_user_id: unknown user"),
        (
            "contacts",
            {"owned_by_user_id": "6f1c2a3b-0009-4000-8000-000000000009"},
            "owned_by_user_id: unknown user",
        ),
        ("contacts", {"company_id": 999999}, "company_id: no companies record 999999"),
        ("contacts", {"lead_score": 5.5}, "lead_score: must have at most 0 decimal places"),
        (
            "companies",
            {"annual_revenue": 10.125},
            "annual_revenue: must have at most 2 decimal places",
        ),
        (
            "deals",
            {"stage": "won", "probability": 50.5},
            "probability: must have at most 0 decimal places",
        ),
    ],
)
def test_validation_messages(
    client: TestClient, object_type: str, fields: dict[str, Any], message: str
) -> None:
    response = put(client, object_type, {"name": "X", "fields": fields})
    assert response.status_code == 400
    assert err(response) == f"Validation failed: {message}"


@pytest.mark.parametrize(
    ("object_type", "field", "value"),
    [
        ("contacts", "lead_score", -1),
        ("companies", "annual_revenue", -0.01),
        ("contacts", "last_contacted", "2024-13-45"),
        ("contacts", "last_contacted", "yesterday"),
        ("contacts", "signed_up_at", "not a timestamp"),
        ("contacts", "newsletter_opt_in", "maybe"),
        ("contacts", "website", "not a url"),
        ("companies", "linkedin_url", "just words"),
        ("contacts", "tags", ["vip", "bogus"]),
        ("companies", "industry", "Software"),
        ("companies", "employee_count", "many"),
    ],
)
def test_invalid_values_name_the_field(
    client: TestClient, object_type: str, field: str, value: Any
) -> None:
    response = put(client, object_type, {"name": "X", "fields": {field: value}})
    assert response.status_code == 400
    assert err(response).startswith(f"Validation failed: {field}: ")


def test_relationship_to_another_type_fails(client: TestClient) -> None:
    other = create(client, "contacts", "Not a company")
    response = put(client, "contacts", {"name": "X", "fields": {"company_id": other["id"]}})
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: company_id: ")


def test_valid_values_round_trip(client: TestClient) -> None:
    company = create(client, "companies", "Acme", annual_revenue=1234.5, employee_count=10)
    fields = {
        "email": "ada@example.org",
        "phone": "+1 555 0100",
        "owned_by_user_id": ADA,
        "job_title": "Engineer",
        "lifecycle_stage": "customer",
        "lead_score": 42,
        "newsletter_opt_in": True,
        "last_contacted": "2024-01-31",
        "company_id": company["id"],
        "tags": ["vip", "partner"],
        "website": "https://ada.example.org",
        "signed_up_at": "2024-01-31T10:00:00Z",
    }
    record = create(client, "contacts", "Ada", **fields)
    for key, value in fields.items():
        if key != "signed_up_at":
            assert record[key] == value, key
    assert record["signed_up_at"] is not None
    assert fetch(client, "contacts", record["id"]) == record
    assert company["annual_revenue"] == 1234.5
    assert company["employee_count"] == 10


def test_decimal_places_boundaries_accepted(client: TestClient) -> None:
    company = create(client, "companies", "Acme", annual_revenue=10.12)
    assert company["annual_revenue"] == 10.12
    deal = create(client, "deals", "D", stage="won", probability=50, amount=0)
    assert deal["probability"] == 50
    contact = create(client, "contacts", "C", lead_score=100)
    assert contact["lead_score"] == 100
    contact = create(client, "contacts", "C2", lead_score=0)
    assert contact["lead_score"] == 0


def test_null_clears_and_is_accepted(client: TestClient) -> None:
    record = create(client, "contacts", "Ada", job_title=None, lead_score=None)
    assert record["job_title"] is None and record["lead_score"] is None


def test_system_fields_through_fields(client: TestClient) -> None:
    record = create(client, "companies", "Acme", domain="acme.example", phone="+1 555 0100")
    assert record["domain"] == "acme.example"
    assert record["phone"] == "+1 555 0100"


def test_email_is_trimmed_and_lower_cased(client: TestClient) -> None:
    record = create(client, "contacts", "Ada", email="  Ada.L@Example.ORG ")
    assert record["email"] == "ada.l@example.org"


def test_domain_is_stored_as_given(client: TestClient) -> None:
    record = create(client, "companies", "Acme", domain="https://www.Acme.example/about")
    assert record["domain"] == "https://www.Acme.example/about"


def test_is_required_field_must_be_present_on_create(client: TestClient) -> None:
    response = put(client, "deals", {"name": "No stage"})
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: stage: ")
    response = put(client, "deals", {"name": "Null stage", "fields": {"stage": None}})
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: stage: ")


def test_profile_image_url(client: TestClient) -> None:
    for url in ("https://img.example/a.png", "http://img.example/b.png"):
        response = put(client, "contacts", {"name": "P", "profile_image_url": url})
        assert response.status_code == 200
        assert response.json()["data"]["profile_image_url"] == url
    for url in ("ftp://img.example/a.png", "javascript:alert(1)", "img.example/a.png", 5):
        response = put(client, "companies", {"name": "P", "profile_image_url": url})
        assert response.status_code == 400, url
        assert err(response).startswith("Validation failed: profile_image_url: ")


def test_fields_must_be_an_object(client: TestClient) -> None:
    response = put(client, "contacts", {"name": "X", "fields": ["job_title"]})
    assert 400 <= response.status_code < 500
    err(response)


def test_custom_objects_always_create(client: TestClient) -> None:
    first = create(client, "deals", "Same", stage="won")
    second = create(client, "deals", "Same", stage="won")
    assert first["id"] != second["id"]


@pytest.fixture
def ticket_client(tmp_path: Path) -> Iterator[TestClient]:
    seed = yaml.safe_load(DEFAULT_SEED.read_text())
    seed["object_types"].append(
        {
            "slug": "tickets",
            "singular_slug": "ticket",
            "display_name": "Support Ticket",
            "plural_display_name": "Support Tickets",
            "description": "Customer issues.",
            "icon": "ticket",
            "fields": [
                {
                    "field_name": "priority",
                    "display_name": "Priority",
                    "field_type": "select",
                    "default_value": "normal",
                    "select_options": [
                        {"label": "Low", "value": "low", "color": None, "order": 0},
                        {"label": "Normal", "value": "normal", "color": None, "order": 1},
                    ],
                },
                {
                    "field_name": "summary",
                    "display_name": "Summary",
                    "field_type": "text",
                    "default_value": "n/a",
                },
                {
                    "field_name": "watchers",
                    "display_name": "Watchers",
                    "field_type": "relationship",
                    "related_object_type_id": 1,
                    "relationship_type": "many_to_many",
                    "allow_multiple": True,
                },
            ],
        }
    )
    path = tmp_path / "seed.yaml"
    path.write_text(yaml.safe_dump(seed))
    yield from make_client(tmp_path / "tickets.db", seed=path)


def test_custom_type_from_seed_gets_next_id(ticket_client: TestClient) -> None:
    types = ticket_client.get("/api/meta/schema").json()["data"]
    assert [(t["id"], t["slug"]) for t in types] == [
        (1, "contacts"),
        (2, "companies"),
        (3, "deals"),
        (4, "tickets"),
    ]


def test_default_value_applied_on_create(ticket_client: TestClient) -> None:
    record = create(ticket_client, "tickets", "T1")
    assert record["priority"] == "normal"
    assert record["summary"] == "n/a"
    record = create(ticket_client, "tickets", "T2", priority="low", summary="given")
    assert record["priority"] == "low"
    assert record["summary"] == "given"


def test_default_value_not_applied_on_update(ticket_client: TestClient) -> None:
    record = create(ticket_client, "tickets", "T1", summary="given")
    response = ticket_client.patch(
        "/api/objects/tickets", json={"id": record["id"], "fields": {"priority": "low"}}
    )
    assert response.status_code == 200
    assert response.json()["data"]["summary"] == "given"


def test_legacy_message_uses_singular_display_name(ticket_client: TestClient) -> None:
    record = create(ticket_client, "tickets", "T1")
    response = ticket_client.post(
        "/api/objects/tickets", json={"id": record["id"], "fieldName": "summary", "fieldValue": "x"}
    )
    assert response.status_code == 200
    assert response.json()["message"] == "Updated custom field 'summary' for support ticket"
    assert create(ticket_client, "ticket", "via singular")["priority"] == "normal"


def test_multi_relationship_drops_deleted_target(ticket_client: TestClient) -> None:
    a = create(ticket_client, "contacts", "A")
    b = create(ticket_client, "contacts", "B")
    ticket = create(ticket_client, "tickets", "T", watchers=[a["id"], b["id"]])
    assert ticket["watchers"] == [a["id"], b["id"]]
    response = ticket_client.request("DELETE", "/api/objects/contacts", json={"id": a["id"]})
    assert response.status_code == 200
    assert fetch(ticket_client, "tickets", ticket["id"])["watchers"] == [b["id"]]
    response = ticket_client.put(
        "/api/objects/tickets", json={"name": "T2", "fields": {"watchers": [a["id"]]}}
    )
    assert response.status_code == 400
    assert err(response).startswith("Validation failed: watchers: ")

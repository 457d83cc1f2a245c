"""Deduplication on create (PUT and batch)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from .conftest import batch, create, delete, fetch


def test_contact_dedup_by_trimmed_case_insensitive_email(client: TestClient) -> None:
    first = create(client, "contacts", "Ada", email="ada@example.org", job_title="Engineer")
    again = create(client, "contacts", "Ada Lovelace", email="  ADA@Example.org ", lead_score=5)
    assert again["id"] == first["id"]
    assert again["name"] == "Ada Lovelace"
    assert again["job_title"] == "Engineer"
    assert again["lead_score"] == 5
    assert again["created_at"] == first["created_at"]
    listing = client.get("/api/objects/contacts").json()
    assert listing["pagination"]["total"] == 1


def test_contacts_without_email_never_dedup(client: TestClient) -> None:
    a = create(client, "contacts", "Same")
    b = create(client, "contacts", "Same")
    assert a["id"] != b["id"]


def test_contacts_do_not_dedup_by_name(client: TestClient) -> None:
    a = create(client, "contacts", "Same", email="a@example.org")
    b = create(client, "contacts", "Same", email="b@example.org")
    assert a["id"] != b["id"]


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        ("acme.example", "ACME.example"),
        ("acme.example", "https://www.acme.example/about"),
        ("https://acme.example", "acme.example"),
        ("www.acme.example", "http://acme.example/"),
    ],
)
def test_company_dedup_by_normalized_domain(client: TestClient, stored: str, given: str) -> None:
    first = create(client, "companies", "Alpha", domain=stored)
    again = create(client, "companies", "Totally Different", domain=given)
    assert again["id"] == first["id"]
    assert again["name"] == "Totally Different"
    assert again["domain"] == given


def test_company_different_domain_and_name_do_not_match(client: TestClient) -> None:
    a = create(client, "companies", "Alpha", domain="alpha.example")
    b = create(client, "companies", "Beta", domain="beta.example")
    assert a["id"] != b["id"]


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        ("https://www.linkedin.com/company/acme", "http://linkedin.com/company/ACME/"),
        ("https://linkedin.com/company/acme/?trk=x", "http://www.linkedin.com/company/acme"),
    ],
)
def test_company_dedup_by_linkedin_url(client: TestClient, stored: str, given: str) -> None:
    first = create(client, "companies", "Alpha", linkedin_url=stored)
    again = create(client, "companies", "Omega", linkedin_url=given)
    assert again["id"] == first["id"]


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        ("Acme", "ACME"),
        ("Acme, Inc.", "acme"),
        ("Acme Inc", "Acme LLC"),
        ("Acme Corporation", "acme"),
        ("Acme GmbH", "Acme"),
        ("Acme   Widgets Ltd", "acme widgets"),
        ("Acme.", "acme"),
        ("Acme Co", "ACME PLC"),
        ("Acme SA", "Acme AG"),
        ("Acme BV", "acme corp"),
        ("Inc", "inc"),
        ("Acme\tInc", "acme"),
        ("Acme S.A.", "Acme"),
        ("Acme Inc LLC", "Acme Inc Ltd"),
    ],
)
def test_company_dedup_by_similar_name(client: TestClient, stored: str, given: str) -> None:
    first = create(client, "companies", stored)
    again = create(client, "companies", given)
    assert again["id"] == first["id"]
    assert again["name"] == given


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        ("Acme", "Acme Widgets"),
        ("Inc", "Acme Inc"),
        ("Acme Inc LLC", "Acme"),  # only one trailing suffix is removed
        ("Costco", "Cost"),  # a suffix is a whole word
        ("Acmeco", "Acme Co"),
    ],
)
def test_company_names_that_differ_do_not_match(
    client: TestClient, stored: str, given: str
) -> None:
    first = create(client, "companies", stored)
    again = create(client, "companies", given)
    assert again["id"] != first["id"]


def test_company_first_match_wins_domain_before_linkedin_before_name(client: TestClient) -> None:
    linkedin = "https://linkedin.com/company/beta"
    gamma = create(client, "companies", "Gamma")
    beta = create(client, "companies", "Beta", linkedin_url=linkedin)
    hit = create(client, "companies", "Gamma", linkedin_url=linkedin)
    assert hit["id"] == beta["id"] != gamma["id"]
    alpha = create(client, "companies", "Alpha", domain="alpha.example")
    hit = create(client, "companies", "Beta", domain="alpha.example", linkedin_url=linkedin)
    assert hit["id"] == alpha["id"]


def test_dedup_hit_keeps_fields_not_given(client: TestClient) -> None:
    first = create(client, "companies", "Acme", domain="acme.example", industry="software")
    again = create(client, "companies", "Acme Inc", employee_count=5)
    assert again["id"] == first["id"]
    assert again["industry"] == "software"
    assert again["domain"] == "acme.example"
    assert again["employee_count"] == 5
    assert fetch(client, "companies", first["id"]) == again


def test_soft_deleted_records_never_match(client: TestClient) -> None:
    contact = create(client, "contacts", "Ada", email="ada@example.org")
    company = create(client, "companies", "Acme", domain="acme.example")
    delete(client, "contacts", contact["id"])
    delete(client, "companies", company["id"])
    assert create(client, "contacts", "Ada", email="ada@example.org")["id"] != contact["id"]
    assert create(client, "companies", "Other", domain="acme.example")["id"] != company["id"]
    assert create(client, "companies", "Acme")["id"] != company["id"]


def test_batch_dedup_hit_is_updated(client: TestClient) -> None:
    contact = create(client, "contacts", "Ada", email="ada@example.org")
    company = create(client, "companies", "Acme Inc", domain="acme.example")
    body = batch(client, "contacts", [{"name": "Ada L", "fields": {"email": " ADA@example.org"}}])
    assert body["results"] == [{"id": contact["id"], "status": "updated"}]
    assert body["summary"] == {"total": 1, "created": 0, "updated": 1, "failed": 0}
    entries = [{"name": "acme"}, {"name": "X", "fields": {"domain": "www.acme.example"}}]
    body = batch(client, "companies", entries)
    assert body["results"] == [
        {"id": company["id"], "status": "updated"},
        {"id": company["id"], "status": "updated"},
    ]


def test_batch_dedup_within_one_batch(client: TestClient) -> None:
    body = batch(
        client,
        "contacts",
        [
            {"name": "One", "fields": {"email": "same@example.org"}},
            {"name": "Two", "fields": {"email": "SAME@example.org"}},
        ],
    )
    first, second = body["results"]
    assert first["status"] == "created"
    assert second == {"id": first["id"], "status": "updated"}
    assert fetch(client, "contacts", first["id"])["name"] == "Two"


def test_custom_objects_never_dedup_in_batch(client: TestClient) -> None:
    body = batch(
        client,
        "deals",
        [
            {"name": "Same", "fields": {"stage": "won"}},
            {"name": "Same", "fields": {"stage": "won"}},
        ],
    )
    assert [r["status"] for r in body["results"]] == ["created", "created"]
    assert body["results"][0]["id"] != body["results"][1]["id"]

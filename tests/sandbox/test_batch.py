"""POST /api/objects/{type}/batch: the seed's rules and the contract's decisions."""

from __future__ import annotations

from typing import Any

import pytest

from .support import TestClient, batch, created, delete


def test_batch_creates_updates_and_fails_in_input_order(client: TestClient) -> None:
    existing = created(client, "contacts", "Old", email="old@x.example")
    r = batch(
        client,
        "contacts",
        [
            {"name": "New", "fields": {"email": "new@x.example"}},
            {"name": "Old again", "fields": {"email": "OLD@x.example"}},  # dedup hit
            {"name": "By id", "match_by": "id", "match_value": existing["id"]},
            {"name": "Bad", "fields": {"email": "nope"}},
            "not an object",
            {"fields": {}},
            {"name": "X", "match_by": "phone", "match_value": "1"},
            {"name": "X", "match_by": "email"},
            {"name": "X", "match_by": "email", "match_value": None},
        ],
    )
    assert r.status_code == 200
    body = r.json()
    statuses = [x["status"] for x in body["results"]]
    assert statuses == ["created", "updated", "updated"] + ["failed"] * 6
    assert body["results"][1]["id"] == existing["id"] == body["results"][2]["id"]
    assert body["summary"] == {"total": 9, "created": 1, "updated": 2, "failed": 6}
    errors = [x.get("error") for x in body["results"]]
    assert errors[:3] == [None, None, None]
    assert all("error" not in x for x in body["results"][:3])
    assert errors[3] == "Validation failed: email: invalid email format"
    assert "object" in errors[4]
    assert errors[5] == "Validation failed: name: required"
    assert "match_by" in errors[6] and "match_value" in errors[7] and "match_value" in errors[8]
    for failed in body["results"][3:]:
        assert failed["id"] is None
    rec = client.get(f"/api/objects/contacts?id={existing['id']}").json()["data"]
    assert rec["name"] == "By id"


def test_entries_see_earlier_entries_of_the_same_batch(client: TestClient) -> None:
    r = batch(
        client,
        "contacts",
        [
            {"name": "A", "match_by": "email", "match_value": "a@x.example"},
            {
                "name": "A2",
                "match_by": "email",
                "match_value": "A@x.example",
                "fields": {"job_title": "CTO"},
            },
            {"name": "A3", "fields": {"email": "a@x.example"}},
        ],
    )
    results = r.json()["results"]
    assert [x["status"] for x in results] == ["created", "updated", "updated"]
    assert len({x["id"] for x in results}) == 1
    rec = client.get("/api/objects/contacts?email=a@x.example").json()["data"]
    assert (rec["name"], rec["job_title"], rec["email"]) == ("A3", "CTO", "a@x.example")


def test_match_by_id_accepts_numeric_strings_and_creates_when_absent(client: TestClient) -> None:
    deal = created(client, "deals", "D", stage="won")
    r = batch(
        client,
        "deals",
        [
            {
                "name": "D2",
                "match_by": "id",
                "match_value": str(deal["id"]),
                "fields": {"stage": "lost"},
            },
            {"name": "D3", "match_by": "id", "match_value": 987654, "fields": {"stage": "won"}},
            {"name": "D4", "match_by": "id", "match_value": "abc"},
        ],
    )
    results = r.json()["results"]
    assert results[0] == {"id": deal["id"], "status": "updated"}
    assert results[1]["status"] == "created" and results[1]["id"] != 987654
    assert results[2]["status"] == "failed"


def test_match_by_name_is_exact_and_lowest_id_wins(client: TestClient) -> None:
    first = created(client, "deals", "Big deal", stage="won")
    created(client, "deals", "Big deal", stage="won")
    r = batch(
        client,
        "deals",
        [
            {
                "name": "Big deal",
                "match_by": "name",
                "match_value": "Big deal",
                "fields": {"amount": 10},
            },
            {
                "name": "big deal",
                "match_by": "name",
                "match_value": "big deal",
                "fields": {"stage": "won"},
            },
        ],
    )
    results = r.json()["results"]
    assert results[0] == {"id": first["id"], "status": "updated"}
    assert results[1]["status"] == "created"


def test_match_by_email_only_for_contacts(client: TestClient) -> None:
    r = batch(client, "companies", [{"name": "C", "match_by": "email", "match_value": "a@b.c"}])
    result = r.json()["results"][0]
    assert result["status"] == "failed" and "email" in result["error"]


def test_deleted_records_never_match(client: TestClient) -> None:
    rec = created(client, "contacts", "A", email="a@x.example")
    delete(client, "contacts", {"id": rec["id"]})
    r = batch(
        client,
        "contacts",
        [
            {
                "name": "A",
                "match_by": "id",
                "match_value": rec["id"],
                "fields": {"email": "a@x.example"},
            },
            {"name": "A", "match_by": "email", "match_value": "a@x.example"},
        ],
    )
    results = r.json()["results"]
    assert results[0]["status"] == "created" and results[0]["id"] != rec["id"]
    assert results[1]["status"] == "updated" and results[1]["id"] == results[0]["id"]


def test_company_batch_dedup_by_domain(client: TestClient) -> None:
    co = created(client, "companies", "Acme", domain="acme.com")
    r = batch(client, "companies", [{"name": "Acme Corp", "fields": {"domain": "www.acme.com"}}])
    assert r.json()["results"] == [{"id": co["id"], "status": "updated"}]


def test_matched_record_gets_name_fields_and_image(client: TestClient) -> None:
    deal = created(client, "deals", "D", stage="won", amount=5)
    batch(
        client,
        "deals",
        [
            {
                "name": "Renamed",
                "match_by": "id",
                "match_value": deal["id"],
                "fields": {"notes": "hi"},
                "profile_image_url": "https://img.example/d.png",
            }
        ],
    )
    rec = client.get(f"/api/objects/deals?id={deal['id']}").json()["data"]
    assert (rec["name"], rec["amount"], rec["notes"], rec["profile_image_url"]) == (
        "Renamed",
        5,
        "hi",
        "https://img.example/d.png",
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, 'Request body must contain an "objects" array'),
        ({"objects": {"name": "x"}}, 'Request body must contain an "objects" array'),
        ({"objects": None}, 'Request body must contain an "objects" array'),
        (
            {"objects": [{"name": "x"}] * 101},
            "Batch size exceeds maximum of 100. Received 101 objects.",
        ),
    ],
)
def test_whole_batch_rejections(client: TestClient, body: Any, error: str) -> None:
    r = client.post("/api/objects/contacts/batch", json=body)
    assert (r.status_code, r.json()) == (400, {"error": error})
    assert client.get("/api/objects/contacts").json()["pagination"]["total"] == 0


def test_empty_batch_and_100_entries(client: TestClient) -> None:
    r = batch(client, "contacts", [])
    assert r.json() == {
        "results": [],
        "summary": {"total": 0, "created": 0, "updated": 0, "failed": 0},
    }
    r = batch(client, "contacts", [{"name": f"C{i}"} for i in range(100)])
    assert r.json()["summary"] == {"total": 100, "created": 100, "updated": 0, "failed": 0}


def test_unknown_object_type_is_404(client: TestClient) -> None:
    r = batch(client, "tickets", [{"name": "x"}])
    assert (r.status_code, r.json()) == (404, {"error": "Object not found"})


def test_empty_name_and_null_match_value_count_as_missing(client: TestClient) -> None:
    r = batch(
        client,
        "contacts",
        [
            {"name": "", "fields": {}},
            {"name": None},
            {"name": "x", "match_by": "id", "match_value": None},
        ],
    )
    assert [x["status"] for x in r.json()["results"]] == ["failed"] * 3

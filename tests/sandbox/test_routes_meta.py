"""Schema, users, views and skill webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

from .support import (
    ADA,
    CUSTOMERS_VIEW,
    KEY,
    LIVE_SKILL,
    PAUSED_SKILL,
    TestClient,
    created,
    delete,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_schema(client: TestClient) -> None:
    r = client.get("/api/meta/schema")
    assert r.status_code == 200
    types = {t["slug"]: t for t in r.json()["data"]}
    assert [(t["id"], t["slug"]) for t in r.json()["data"]] == [
        (1, "contacts"),
        (2, "companies"),
        (3, "deals"),
    ]
    company_id = next(f for f in types["contacts"]["fields"] if f["field_name"] == "company_id")
    assert (
        company_id["field_type"],
        company_id["related_object_type_id"],
        company_id["relationship_type"],
    ) == ("relationship", 2, "many_to_one")
    for t in types.values():
        owner = next(f for f in t["fields"] if f["field_name"] == "owned_by_user_id")
        assert owner["field_type"] == "user"


def test_users(client: TestClient) -> None:
    users = client.get("/api/meta/users").json()["data"]
    assert len(users) == 4
    assert users[0] == {
        "id": ADA,
        "full_name": "Ada Lovelace",
        "access_level": "admin",
        "email": "ada@acme.example",
    }


def test_views_list_and_run(client: TestClient) -> None:
    views = client.get("/api/objects/contacts/views").json()["data"]
    assert views == [
        {
            "id": CUSTOMERS_VIEW,
            "name": "Customers",
            "view_type": "table",
            "columns": ["name", "email", "lifecycle_stage", "lead_score"],
        }
    ]
    assert client.get("/api/objects/deals/views").json() == {"data": []}
    for name, stage in (
        ("Zed", "customer"),
        ("Amy", "customer"),
        ("Bob", "lead"),
        ("Cat", "customer"),
    ):
        created(client, "contacts", name, lifecycle_stage=stage)
    gone = created(client, "contacts", "Abe", lifecycle_stage="customer")
    delete(client, "contacts", {"id": gone["id"]})
    r = client.get(f"/api/objects/contacts/views/{CUSTOMERS_VIEW}?limit=2").json()
    assert [x["name"] for x in r["data"]] == ["Amy", "Cat"]
    assert r["view"] == {"id": CUSTOMERS_VIEW, "name": "Customers"}
    assert r["pagination"] == {"total": 3, "limit": 2, "offset": 0, "has_more": True}


def test_unknown_views(client: TestClient) -> None:
    for path in (
        f"/api/objects/companies/views/{CUSTOMERS_VIEW}",
        "/api/objects/contacts/views/not-a-uuid",
        "/api/objects/contacts/views/7a1e0c52-0001-4000-8000-0000000000ff",
    ):
        r = client.get(path)
        assert (r.status_code, r.json()) == (404, {"error": "View not found"})
    r = client.get("/api/objects/tickets/views")
    assert (r.status_code, r.json()) == (404, {"error": "Object not found"})


def test_webhook_triggers_a_live_skill_and_is_recorded(client: TestClient) -> None:
    r = client.post(f"/api/webhooks/{LIVE_SKILL}", json={"contact_id": 7})
    assert r.status_code == 200
    body = r.json()
    assert body["success"] is True and UUID.match(body["skillRunId"])
    assert body["message"] == "Webhook received and skill triggered successfully"
    runs = client.get("/api/sandbox/skill-runs").json()["data"]
    assert [(x["id"], x["skill_id"], x["payload"]) for x in runs] == [
        (body["skillRunId"], LIVE_SKILL, {"contact_id": 7})
    ]


def test_webhook_signature(client: TestClient) -> None:
    raw = json.dumps({"a": 1}).encode()
    good = "sha256=" + hmac.new(KEY.encode(), raw, hashlib.sha256).hexdigest()
    r = client.post(
        f"/api/webhooks/{LIVE_SKILL}", content=raw, headers={"x-webhook-signature": good}
    )
    assert r.status_code == 200
    r = client.post(
        f"/api/webhooks/{LIVE_SKILL}",
        content=raw,
        headers={"x-webhook-signature": "sha256=" + "0" * 64},
    )
    assert (r.status_code, r.json()) == (401, {"error": "Invalid webhook signature"})
    assert len(client.get("/api/sandbox/skill-runs").json()["data"]) == 1


def test_webhook_unknown_or_paused_skill(client: TestClient) -> None:
    for skill in (PAUSED_SKILL, "00000000-0000-4000-8000-0000000000ff", "nope"):
        r = client.post(f"/api/webhooks/{skill}", json={})
        assert (r.status_code, r.json()) == (404, {"error": "Skill not found"})
    r = client.post(f"/api/webhooks/{LIVE_SKILL}", content=b"[1]")
    assert (r.status_code, r.json()) == (400, {"error": "Invalid JSON body"})

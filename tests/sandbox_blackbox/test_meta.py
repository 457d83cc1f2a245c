"""Schema, users, views and skill webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

import pytest
from starlette.testclient import TestClient

from .conftest import KEY, create, delete, err

FIELD_KEYS = {
    "field_name",
    "display_name",
    "field_type",
    "field_order",
    "is_required",
    "description",
    "select_options",
    "allow_multiple",
    "related_object_type_id",
    "relationship_type",
    "number_min",
    "number_max",
    "number_decimal_places",
    "currency_decimal_places",
    "percentage_decimal_places",
    "value_scale",
    "default_value",
    "visibility_type",
}
TYPE_KEYS = {"id", "slug", "display_name", "plural_display_name", "description", "icon", "fields"}
VIEW_ID = "7a1e0c52-0001-4000-8000-000000000001"
LIVE_SKILL = "00000000-0000-4000-8000-000000000001"
PAUSED_SKILL = "00000000-0000-4000-8000-000000000002"
NO_SKILL = "00000000-0000-4000-8000-0000000000ff"


def schema(client: TestClient) -> dict[str, dict[str, Any]]:
    response = client.get("/api/meta/schema")
    assert response.status_code == 200
    assert set(response.json()) == {"data"}
    return {t["slug"]: t for t in response.json()["data"]}


def fields_of(object_type: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field_name"]: f for f in object_type["fields"]}


def test_schema_types_and_ids(shared: TestClient) -> None:
    types = shared.get("/api/meta/schema").json()["data"]
    assert [(t["id"], t["slug"]) for t in types] == [
        (1, "contacts"),
        (2, "companies"),
        (3, "deals"),
    ]
    for object_type in types:
        assert set(object_type) >= TYPE_KEYS
    by_slug = schema(shared)
    assert by_slug["contacts"]["display_name"] == "Person"
    assert by_slug["contacts"]["plural_display_name"] == "People"
    assert by_slug["deals"]["display_name"] == "Deal"
    assert by_slug["deals"]["icon"] == "handshake"


def test_every_field_has_all_18_keys(shared: TestClient) -> None:
    for object_type in schema(shared).values():
        for field in object_type["fields"]:
            assert set(field) >= FIELD_KEYS, field
            assert isinstance(field["is_required"], bool)
            # docs/sandbox.md: allow_multiple is false for select and relationship fields and
            # null (does not apply) for the others.
            if field["field_type"] in ("select", "relationship"):
                assert isinstance(field["allow_multiple"], bool)
            else:
                assert field["allow_multiple"] in (None, False)
            assert isinstance(field["field_order"], int)
            assert field["visibility_type"] == "visible"
            assert field["value_scale"] is None
    assert len(FIELD_KEYS) == 18


def test_field_definitions_match_the_seed(shared: TestClient) -> None:
    by_slug = schema(shared)
    contacts = fields_of(by_slug["contacts"])
    expected_types = {
        "email": "email",
        "phone": "phone",
        "owned_by_user_id": "user",
        "job_title": "text",
        "lifecycle_stage": "select",
        "lead_score": "number",
        "newsletter_opt_in": "boolean",
        "last_contacted": "date",
        "company_id": "relationship",
        "tags": "select",
        "website": "url",
        "signed_up_at": "datetime",
    }
    for name, field_type in expected_types.items():
        assert contacts[name]["field_type"] == field_type, name
    score = contacts["lead_score"]
    assert (score["number_min"], score["number_max"], score["number_decimal_places"]) == (0, 100, 0)
    assert score["select_options"] is None
    assert score["related_object_type_id"] is None
    assert score["currency_decimal_places"] is None
    assert contacts["job_title"]["number_min"] is None
    assert contacts["job_title"]["default_value"] is None
    relation = contacts["company_id"]
    assert relation["related_object_type_id"] == 2
    assert relation["relationship_type"] == "many_to_one"
    assert contacts["tags"]["allow_multiple"] is True
    assert contacts["lifecycle_stage"]["allow_multiple"] is False

    companies = fields_of(by_slug["companies"])
    for name in ("domain", "linkedin_url", "phone", "owned_by_user_id"):
        assert name in companies
    revenue = companies["annual_revenue"]
    assert (revenue["field_type"], revenue["currency_decimal_places"], revenue["number_min"]) == (
        "currency",
        2,
        0,
    )

    deals = fields_of(by_slug["deals"])
    assert deals["stage"]["is_required"] is True
    assert deals["amount"]["is_required"] is False
    assert deals["probability"]["field_type"] == "percentage"
    assert deals["probability"]["percentage_decimal_places"] == 0
    assert deals["company_id"]["related_object_type_id"] == 2
    assert deals["owned_by_user_id"]["field_type"] == "user"


def test_select_options_shape(shared: TestClient) -> None:
    contacts = fields_of(schema(shared)["contacts"])
    options = contacts["lifecycle_stage"]["select_options"]
    assert options == [
        {"label": "Lead", "value": "lead", "color": "#9CA3AF", "order": 0},
        {"label": "Qualified", "value": "qualified", "color": "#3B82F6", "order": 1},
        {"label": "Customer", "value": "customer", "color": "#10B981", "order": 2},
        {"label": "Churned", "value": "churned", "color": "#EF4444", "order": 3},
    ]
    tags = contacts["tags"]["select_options"]
    assert [(o["value"], o["label"]) for o in tags] == [
        ("vip", "VIP"),
        ("partner", "Partner"),
        ("churn-risk", "Churn risk"),
        ("newsletter", "Newsletter"),
    ]
    assert tags[3]["color"] is None
    for option in tags:
        assert set(option) == {"label", "value", "color", "order"}


def test_users(shared: TestClient) -> None:
    response = shared.get("/api/meta/users")
    assert response.status_code == 200
    users = response.json()["data"]
    assert [(u["full_name"], u["access_level"], u["email"]) for u in users] == [
        ("Ada Lovelace", "admin", "ada@acme.example"),
        ("Ben Carter", "member", "ben@acme.example"),
        ("Chloe Nguyen", "member", "chloe@acme.example"),
        ("Diego Ramos", "admin", "diego@acme.example"),
    ]
    for user in users:
        assert isinstance(user["id"], str)
        assert str(uuid.UUID(user["id"])) == user["id"]
    assert users[0]["id"] == "6f1c2a3b-0001-4000-8000-000000000001"


def test_user_ids_are_accepted_as_owners(client: TestClient) -> None:
    users = client.get("/api/meta/users").json()["data"]
    for user in users:
        record = create(
            client, "companies", f"Owned by {user['full_name']}", owned_by_user_id=user["id"]
        )
        assert record["owned_by_user_id"] == user["id"]


# --- views -------------------------------------------------------------------------------


def test_list_views(shared: TestClient) -> None:
    response = shared.get("/api/objects/contacts/views")
    assert response.status_code == 200
    views = response.json()["data"]
    assert len(views) == 1
    view = views[0]
    assert {"id", "name", "view_type", "columns"} <= set(view)
    assert view["id"] == VIEW_ID
    assert view["name"] == "Customers"
    assert view["view_type"] == "table"
    assert view["columns"] == ["name", "email", "lifecycle_stage", "lead_score"]
    response = shared.get("/api/objects/companies/views")
    assert response.status_code == 200
    assert response.json()["data"] == []


def test_run_view_filters_and_sorts(client: TestClient) -> None:
    create(client, "contacts", "Zed", lifecycle_stage="customer")
    create(client, "contacts", "Bob", lifecycle_stage="lead")
    create(client, "contacts", "Amy", lifecycle_stage="customer")
    create(client, "contacts", "Max", lifecycle_stage="customer")
    response = client.get(f"/api/objects/contacts/views/{VIEW_ID}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"data", "view", "pagination"}
    assert [r["name"] for r in body["data"]] == ["Amy", "Max", "Zed"]
    assert body["view"]["id"] == VIEW_ID and body["view"]["name"] == "Customers"
    assert body["pagination"]["total"] == 3
    response = client.get(
        f"/api/objects/contacts/views/{VIEW_ID}", params={"limit": 1, "offset": 1}
    )
    body = response.json()
    assert [r["name"] for r in body["data"]] == ["Max"]
    assert body["pagination"] == {"total": 3, "limit": 1, "offset": 1, "has_more": True}
    amy = client.get("/api/objects/contacts", params={"search": "Amy"}).json()["data"][0]
    delete(client, "contacts", amy["id"])
    body = client.get(f"/api/objects/contacts/views/{VIEW_ID}").json()
    assert [r["name"] for r in body["data"]] == ["Max", "Zed"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/objects/contacts/views/7a1e0c52-0001-4000-8000-0000000000ff",
        "/api/objects/contacts/views/not-a-uuid",
        f"/api/objects/companies/views/{VIEW_ID}",
    ],
)
def test_unknown_view(shared: TestClient, path: str) -> None:
    response = shared.get(path)
    assert response.status_code == 404
    assert err(response) == "View not found"


def test_views_of_unknown_type(shared: TestClient) -> None:
    response = shared.get("/api/objects/widgets/views")
    assert response.status_code == 404
    err(response)


# --- webhooks ----------------------------------------------------------------------------


def sign(body: bytes, key: str = KEY) -> str:
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def test_live_skill_triggers(shared: TestClient) -> None:
    response = shared.post(f"/api/webhooks/{LIVE_SKILL}", json={"contact_id": 1})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"success", "skillRunId", "message"}
    assert body["success"] is True
    assert body["message"] == "Webhook received and skill triggered successfully"
    assert str(uuid.UUID(body["skillRunId"])) == body["skillRunId"].lower()
    again = shared.post(f"/api/webhooks/{LIVE_SKILL}", json={}).json()
    assert again["skillRunId"] != body["skillRunId"]


@pytest.mark.parametrize("skill", [PAUSED_SKILL, NO_SKILL, "not-a-uuid", "1"])
def test_paused_or_unknown_skill(shared: TestClient, skill: str) -> None:
    response = shared.post(f"/api/webhooks/{skill}", json={"a": 1})
    assert response.status_code == 404
    assert err(response) == "Skill not found"


def test_webhook_signature(shared: TestClient) -> None:
    raw = json.dumps({"event": "contact.created", "id": 7}).encode()
    url = f"/api/webhooks/{LIVE_SKILL}"
    headers = {"content-type": "application/json"}
    response = shared.post(url, content=raw, headers={**headers, "x-webhook-signature": sign(raw)})
    assert response.status_code == 200
    assert response.json()["success"] is True
    for bad in (
        sign(raw, "sk_live_other"),
        sign(raw + b" "),
        "sha256=" + "0" * 64,
        "sha256=nothex",
        sign(raw).removeprefix("sha256="),
        "",
    ):
        response = shared.post(url, content=raw, headers={**headers, "x-webhook-signature": bad})
        assert response.status_code == 401, bad
        assert err(response) == "Invalid webhook signature"


def test_webhook_body_must_be_object(shared: TestClient) -> None:
    response = shared.post(f"/api/webhooks/{LIVE_SKILL}", content=b"[1]")
    assert response.status_code == 400
    assert err(response) == "Invalid JSON body"

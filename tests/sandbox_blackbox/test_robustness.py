"""Nothing a client sends may produce a 500; text values round-trip exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from .conftest import err

SAFE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=30,
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | SAFE_TEXT,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(SAFE_TEXT, children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = (
    st.sampled_from(
        [
            "name",
            "fields",
            "id",
            "email",
            "fieldName",
            "fieldValue",
            "match_by",
            "match_value",
            "objects",
            "profile_image_url",
            "job_title",
            "lead_score",
            "company_id",
            "tags",
            "lifecycle_stage",
            "owned_by_user_id",
            "stage",
            "domain",
        ]
    )
    | SAFE_TEXT
)
BODIES = st.recursive(
    st.dictionaries(KEYS, JSON_VALUES, max_size=6),
    lambda children: st.dictionaries(KEYS, children | JSON_VALUES | st.lists(children, max_size=3)),
    max_leaves=20,
)
ROUTES = st.sampled_from(
    [
        ("PUT", "/api/objects/contacts"),
        ("PUT", "/api/objects/companies"),
        ("PUT", "/api/objects/deals"),
        ("POST", "/api/objects/contacts"),
        ("PATCH", "/api/objects/companies"),
        ("DELETE", "/api/objects/deals"),
        ("POST", "/api/objects/contacts/batch"),
        ("POST", "/api/objects/companies/batch"),
        ("POST", "/api/webhooks/00000000-0000-4000-8000-000000000001"),
    ]
)
QUERY = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "email",
            "limit",
            "offset",
            "search",
            "sort_by",
            "sort_order",
            "filter[name]",
            "filter[lead_score]",
            "include_deleted",
        ]
    ),
    SAFE_TEXT,
    max_size=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(route=ROUTES, body=BODIES)
def test_no_body_produces_a_server_error(
    shared: TestClient, route: tuple[str, str], body: dict[str, Any]
) -> None:
    method, path = route
    if path.endswith("/batch") and "objects" not in body:
        body = {"objects": [body]}
    response = shared.request(method, path, json=body)
    assert response.status_code < 500, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    if response.status_code >= 400:
        err(response)


@settings(max_examples=80, deadline=None)
@given(params=QUERY)
def test_no_query_produces_a_server_error(shared: TestClient, params: dict[str, str]) -> None:
    response = shared.get("/api/objects/contacts", params=params)
    assert response.status_code < 500, (response.status_code, response.text)
    if response.status_code >= 400:
        err(response)


@settings(max_examples=60, deadline=None)
@given(name=SAFE_TEXT.filter(lambda s: s.strip() == s and s != ""), title=SAFE_TEXT)
def test_text_round_trip(shared: TestClient, name: str, title: str) -> None:
    response = shared.put(
        "/api/objects/deals", json={"name": name, "fields": {"stage": "won", "notes": title}}
    )
    assert response.status_code == 200, response.text
    record = response.json()["data"]
    assert record["name"] == name
    assert record["notes"] == title
    fetched = shared.get("/api/objects/deals", params={"id": record["id"]}).json()["data"]
    assert fetched == record

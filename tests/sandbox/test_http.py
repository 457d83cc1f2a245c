"""Fuzzing the request parsing: no body, path or query a client sends yields a 5xx."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.sandbox.app import SandboxApp

from .support import H, TestClient

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "email",
        "phone",
        "lead_score",
        "tags",
        "company_id",
        "stage",
        "owned_by_user_id",
        "signed_up_at",
        "amount",
        "domain",
        "x",
    ]
)
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "name": json_values,
            "fields": st.dictionaries(field_names, json_values, max_size=4),
            "id": st.integers() | json_values,
            "email": json_values,
            "fieldName": field_names,
            "fieldValue": json_values,
            "profile_image_url": json_values,
            "objects": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name": json_values,
                        "match_by": st.sampled_from(["id", "email", "name", "x"]),
                        "match_value": json_values,
                        "fields": st.dictionaries(field_names, json_values, max_size=3),
                    },
                ),
                max_size=5,
            ),
        },
    ),
)
METHODS = ["GET", "PUT", "POST", "PATCH", "DELETE"]
PATHS = [
    "/api/objects/contacts",
    "/api/objects/companies",
    "/api/objects/deals",
    "/api/objects/deal/batch",
    "/api/objects/contacts/batch",
    "/api/webhooks/x",
    "/api/objects/contacts/views",
    "/api/objects/contacts/views/x",
]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=st.sampled_from(METHODS),
    path=st.sampled_from(PATHS),
    body=bodies,
    query=st.dictionaries(
        st.sampled_from(
            [
                "limit",
                "offset",
                "id",
                "email",
                "sort_by",
                "sort_order",
                "search",
                "filter[email]",
                "include_deleted",
            ]
        ),
        st.text(max_size=12),
        max_size=3,
    ),
)
def test_no_request_yields_a_server_error(
    app: SandboxApp, method: str, path: str, body: Any, query: dict[str, str]
) -> None:
    client = TestClient(app, headers=H)
    r = client.request(method, path, params=query, content=json.dumps(body).encode())
    assert r.status_code < 500, r.text
    assert r.headers["content-type"] == "application/json"
    if r.status_code >= 400:
        assert set(r.json()) == {"error"}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=st.binary(max_size=64))
def test_arbitrary_bytes_never_yield_a_server_error(app: SandboxApp, raw: bytes) -> None:
    client = TestClient(app, headers=H)
    for method, path in (("PUT", "/api/objects/contacts"), ("POST", "/api/objects/deals/batch")):
        assert client.request(method, path, content=raw).status_code < 500

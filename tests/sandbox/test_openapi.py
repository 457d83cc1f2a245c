"""The served OpenAPI document against the implementation (schemathesis, in-process):
no 5xx for any generated request (positive and negative data), documented status codes,
content types and response schemas, and no request valid by the document rejected with a
400 (``positive_data_acceptance``; a 404 for a record, view or skill that does not exist is
an accepted answer)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from recordsync.sandbox import create_app

from .support import KEY, H, TestClient

_DB = Path(tempfile.mkdtemp(prefix="recordsync-openapi-")) / "sandbox.db"
APP = create_app(_DB, api_key=KEY)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# the document's info says it: no string anywhere in a body may hold NUL or a lone surrogate
# (400 Invalid JSON body, also inside free-form values such as batch entries and extra keys)
schema.config.generation.update(allow_x00=False, codec="utf-8")
PLURAL = ("contacts", "companies", "deals")
SINGULAR = ("contact", "company", "deal")
# a singular slug's path items are the plural's (checked below): run the plural ones only
checked = schema.exclude(path_regex=r"^/api/objects/(contact|company|deal)(/batch)?$")


def test_document_lists_every_route() -> None:
    doc: dict[str, Any] = schema.raw_schema
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if m != "parameters"}
    per_type = {
        op
        for name in PLURAL + SINGULAR
        for op in (
            ("GET", f"/api/objects/{name}"),
            ("PUT", f"/api/objects/{name}"),
            ("POST", f"/api/objects/{name}"),
            ("PATCH", f"/api/objects/{name}"),
            ("DELETE", f"/api/objects/{name}"),
            ("POST", f"/api/objects/{name}/batch"),
        )
    }
    assert ops == per_type | {
        ("GET", "/api/meta/schema"),
        ("GET", "/api/meta/users"),
        ("GET", "/api/objects/{objectType}/views"),
        ("GET", "/api/objects/{objectType}/views/{viewId}"),
        ("POST", "/api/webhooks/{skillId}"),
        ("GET", "/api/sandbox/skill-runs"),
    }


def _without_ids(node: Any, plural: str, singular: str) -> Any:
    """``node`` with its operation ids named after the plural slug."""
    if isinstance(node, dict):
        out = {k: _without_ids(v, plural, singular) for k, v in node.items()}
        if "operationId" in out:
            out["operationId"] = out["operationId"].replace(f"_{singular}", f"_{plural}")
        return out
    if isinstance(node, list):
        return [_without_ids(v, plural, singular) for v in node]
    return node


@pytest.mark.parametrize(("plural", "singular"), list(zip(PLURAL, SINGULAR, strict=True)))
def test_a_singular_slug_has_the_plural_path_items(plural: str, singular: str) -> None:
    paths = schema.raw_schema["paths"]
    for tail in ("", "/batch"):
        same = _without_ids(paths[f"/api/objects/{singular}{tail}"], plural, singular)
        assert same == paths[f"/api/objects/{plural}{tail}"]


def test_fields_are_exact_to_the_seed() -> None:
    put = schema.raw_schema["paths"]["/api/objects/deals"]["put"]
    body = put["requestBody"]["content"]["application/json"]["schema"]
    fields = body["properties"]["fields"]
    assert body["required"] == ["name", "fields"] and fields["required"] == ["stage"]
    assert fields["additionalProperties"] is False
    stages = ["prospecting", "proposal", "negotiation", "won", "lost"]
    assert fields["properties"]["stage"]["enum"] == stages
    assert fields["properties"]["probability"]["anyOf"][0] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 100,
    }
    assert fields["properties"]["company_id"]["anyOf"][0]["x-references"] == "companies"


def _references_a_record(case: schemathesis.Case[Any]) -> bool:
    """The body gives a relationship field a record id: whether that record exists is not
    the document's to say (a 400 names the field)."""
    body = case.body if isinstance(case.body, dict) else {}
    values = dict(body.get("fields") or {}) if isinstance(body.get("fields"), dict) else {}
    if "fieldName" in body:
        values[str(body["fieldName"])] = body.get("fieldValue")
    name = case.operation.path.rsplit("/", 1)[-1]
    ot = APP.state.service.catalog.resolve(name)
    return ot is not None and any(
        v not in (None, []) and k in ot.fields and ot.fields[k].type == "relationship"
        for k, v in values.items()
    )


@checked.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.slow
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case[Any]) -> None:
    excluded: list[Any] = []
    if _references_a_record(case):
        excluded.append(positive_data_acceptance)
    if case.operation.method.upper() == "GET":
        # the contract ignores unknown query parameters, which schemathesis counts as invalid
        excluded.append(negative_data_rejection)
    case.call_and_validate(headers=H, excluded_checks=excluded)


def _valid(method: str, path: str, body: dict[str, Any]) -> bool:
    op = schema.raw_schema["paths"][path][method.lower()]
    body_schema = op["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator(body_schema).is_valid(body)


REJECTED = [
    ("PUT", "/api/objects/contacts", {"name": ""}),
    ("PUT", "/api/objects/deals", {"name": "Deal"}),  # stage is required
    ("PUT", "/api/objects/contacts", {"name": "A", "fields": {"lead_score": 101}}),
    ("PUT", "/api/objects/contacts", {"name": "A", "fields": {"colour": "red"}}),
    ("PUT", "/api/objects/companies", {"name": "A", "fields": {"annual_revenue": 1.005}}),
    ("PUT", "/api/objects/contacts", {"name": "A", "profile_image_url": "ftp://x.example"}),
    ("PATCH", "/api/objects/contacts", {"email": "a@x.example"}),  # nothing to update
    ("PATCH", "/api/objects/companies", {"id": 1, "fields": {}}),
    ("PATCH", "/api/objects/companies", {"name": "A"}),  # no id
    ("POST", "/api/objects/contacts", {"id": 1, "fieldName": "", "fieldValue": "x"}),
    ("POST", "/api/objects/deals", {"id": 1, "fieldName": "stage", "fieldValue": None}),
]


@pytest.mark.parametrize(("method", "path", "body"), REJECTED)
def test_what_the_sandbox_rejects_the_document_does_not_allow(
    client: TestClient, method: str, path: str, body: dict[str, Any]
) -> None:
    assert not _valid(method, path, body)
    assert client.request(method, path, json=body).status_code == 400


def test_an_empty_sort_by_is_outside_the_document(client: TestClient) -> None:
    params = schema.raw_schema["paths"]["/api/objects/contacts"]["get"]["parameters"]
    (sort_by,) = [p["schema"] for p in params if p["name"] == "sort_by"]
    assert "" not in sort_by["enum"] and "lead_score" in sort_by["enum"]
    assert client.get("/api/objects/contacts", params={"sort_by": ""}).status_code == 400
    assert client.get("/api/objects/contacts", params={"sort_by": "lead_score"}).status_code == 200


def test_typical_bodies_are_valid_and_accepted(client: TestClient) -> None:
    fields = {
        "email": "ann@x.example",
        "phone": "+15550100",
        "lifecycle_stage": "lead",
        "tags": ["vip"],
        "lead_score": 7,
        "last_contacted": "2026-01-31",
        "signed_up_at": "2026-01-31T08:00:00.5Z",
        "website": "https://x.example/a",
        "company_id": None,
    }
    body = {"name": "Ann", "fields": fields}
    assert _valid("PUT", "/api/objects/contacts", body)
    created = client.put("/api/objects/contacts", json=body)
    assert created.status_code == 200
    patch = {"email": "ann@x.example", "fields": {"lead_score": None}}
    assert _valid("PATCH", "/api/objects/contacts", patch)
    assert client.patch("/api/objects/contacts", json=patch).status_code == 200
    legacy = {"id": created.json()["data"]["id"], "fieldName": "name", "fieldValue": "Ann B"}
    assert _valid("POST", "/api/objects/contact", legacy)
    assert client.post("/api/objects/contact", json=legacy).status_code == 200


def test_filters_are_the_types_fields(client: TestClient) -> None:
    params = schema.raw_schema["paths"]["/api/objects/contacts"]["get"]["parameters"]
    (filters,) = [p for p in params if p["name"] == "filter"]
    assert (filters["style"], filters["schema"]["additionalProperties"]) == ("deepObject", False)
    props = filters["schema"]["properties"]
    assert props["newsletter_opt_in"]["enum"] == ["true", "false", "1", "0"]
    assert "colour" not in props
    assert client.get("/api/objects/contacts?filter[colour]=red").status_code == 400
    assert client.get("/api/objects/contacts?filter[newsletter_opt_in]=yes").status_code == 400
    assert client.get("/api/objects/contacts?filter[newsletter_opt_in]=1").status_code == 200


def test_batch_entries_are_documented_per_type(client: TestClient) -> None:
    entry_schema = schema.raw_schema["components"]["schemas"]["BatchInput_deals"]
    validator = jsonschema.Draft202012Validator(entry_schema)
    good = {"name": "Big deal", "fields": {"stage": "won", "amount": 10.5}}
    unknown = {"name": "Odd deal", "fields": {"stage": "won", "colour": "red"}}
    by_email = {"name": "Deal", "match_by": "email", "match_value": "a@x.example"}
    assert validator.is_valid(good)
    assert not validator.is_valid(unknown) and not validator.is_valid(by_email)
    answer = client.post("/api/objects/deals/batch", json={"objects": [good, unknown, by_email]})
    assert answer.status_code == 200  # a bad entry fails on its own
    assert [r["status"] for r in answer.json()["results"]] == ["created", "failed", "failed"]

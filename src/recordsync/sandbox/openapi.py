"""The sandbox's own OpenAPI 3.1 document (served at ``/openapi.json`` without a key).

Hand-written to match what the routes implement; the schemathesis run in
tests/sandbox/test_openapi.py checks every operation's answers against it.
"""

from __future__ import annotations

from typing import Any

from recordsync.sandbox.catalog import Catalog, ObjectType
from recordsync.sandbox.openapi_fields import (
    RECORD_ID,
    TEXT,
    batch_input,
    create_body,
    filter_param,
    legacy_body,
    patch_body,
    sortable,
)
from recordsync.sandbox.openapi_schemas import (
    ANY,
    BATCH_INPUT,
    BATCH_ITEM,
    BATCH_RESULT,
    FIELD_DEF,
    OBJECT_TYPE,
    PAGINATION,
    RECORD,
    USER,
    VIEW,
    answers,
    body,
    obj,
    ref,
)


def _data(schema: dict[str, Any]) -> dict[str, Any]:
    return obj({"data": schema}, ["data"])


def _q(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


PAGE = [
    _q("limit", {"type": "integer", "minimum": 1, "maximum": 200}),
    _q("offset", {"type": "integer", "minimum": 0}),
]


def _objects(ot: ObjectType, name: str, users: list[str]) -> dict[str, Any]:
    """The path item ``/api/objects/<name>`` of one object type (``name``: its plural slug or
    its singular one), with request schemas exact to its fields."""
    op = name.replace("-", "_")
    record_page = obj(
        {"data": {"type": "array", "items": ref("Record")}, "pagination": ref("Pagination")},
        ["data", "pagination"],
    )
    read_answer = {"oneOf": [_data(ref("Record")), record_page]}
    fetch = [_q("id", {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1})]
    if ot.is_contacts:
        fetch.append(_q("email", TEXT))
    return {
        "get": {
            "operationId": f"readRecords_{op}",
            "summary": "List records, or fetch one by id"
            + (" or email" if ot.is_contacts else ""),
            "parameters": [
                *PAGE,
                _q("search", TEXT),
                _q("sort_by", {"type": "string", "enum": sortable(ot)}),
                _q("sort_order", {"type": "string", "enum": ["asc", "desc"]}),
                _q("include_deleted", {"type": "boolean"}),
                filter_param(ot),
                *fetch,
            ],
            "responses": answers(read_answer, "A record or a page of records", 400, 404),
        },
        "put": {
            "operationId": f"createRecord_{op}",
            "summary": "Create" + (" (deduplicates)" if ot.is_contacts or ot.is_companies else ""),
            "requestBody": body(create_body(ot, users)),
            "responses": answers(_data(ref("Record")), "Object created", 400, 404, 413),
        },
        "post": {
            "operationId": f"updateField_{op}",
            "summary": "Update a single field (legacy)",
            "requestBody": body(legacy_body(ot, users)),
            "responses": answers(
                obj({"data": ref("Record"), "message": {"type": "string"}}, ["data", "message"]),
                "Field updated",
                400,
                404,
                413,
            ),
        },
        "patch": {
            "operationId": f"updateRecord_{op}",
            "summary": "Update several fields",
            "requestBody": body(patch_body(ot, users)),
            "responses": answers(_data(ref("Record")), "Record updated", 400, 404, 413),
        },
        "delete": {
            "operationId": f"deleteRecord_{op}",
            "summary": "Soft-delete a record",
            "requestBody": body(obj({"id": RECORD_ID}, ["id"])),
            "responses": answers(
                obj({"success": {"type": "boolean"}}, ["success"]), "Object deleted", 400, 404, 413
            ),
        },
    }


def _batch(ot: ObjectType, name: str) -> dict[str, Any]:
    entry = {**BATCH_ITEM, "anyOf": [ref(f"BatchInput_{ot.slug}"), {}]}
    return {
        "post": {
            "operationId": f"batchUpsert_{name.replace('-', '_')}",
            "summary": "Create or update up to 100 records",
            "requestBody": body(
                obj(
                    {"objects": {"type": "array", "maxItems": 100, "items": entry}},
                    ["objects"],
                )
            ),
            "responses": answers(ref("BatchResponse"), "Batch processed", 400, 404, 413),
        },
    }


def openapi_document(catalog: Catalog) -> dict[str, Any]:
    names = sorted(catalog.by_name)
    users = sorted(catalog.user_ids)
    type_param = {
        "name": "objectType",
        "in": "path",
        "required": True,
        "description": "Object type slug (plural, or singular where the seed declares one)",
        "schema": {"type": "string", "enum": names},
    }
    per_type: dict[str, Any] = {}
    for name in names:
        ot = catalog.by_name[name]
        per_type[f"/api/objects/{name}"] = _objects(ot, name, users)
        per_type[f"/api/objects/{name}/batch"] = _batch(ot, name)
    view_id = {"name": "viewId", "in": "path", "required": True, "schema": {"type": "string"}}
    skill_id = {"name": "skillId", "in": "path", "required": True, "schema": {"type": "string"}}
    paths = {
        **per_type,
        "/api/meta/schema": {
            "get": {
                "operationId": "getSchema",
                "summary": "Object types and field definitions",
                "responses": answers(
                    _data({"type": "array", "items": ref("ObjectType")}), "Object types"
                ),
            }
        },
        "/api/meta/users": {
            "get": {
                "operationId": "getUsers",
                "summary": "Organization users",
                "responses": answers(_data({"type": "array", "items": ref("User")}), "Users"),
            }
        },
        "/api/objects/{objectType}/views": {
            "parameters": [type_param],
            "get": {
                "operationId": "listViews",
                "summary": "Views of an object type",
                "responses": answers(_data({"type": "array", "items": ref("View")}), "Views", 404),
            },
        },
        "/api/objects/{objectType}/views/{viewId}": {
            "parameters": [type_param, view_id],
            "get": {
                "operationId": "runView",
                "summary": "Records of a view (its filters and sort)",
                "parameters": PAGE,
                "responses": answers(
                    obj(
                        {
                            "data": {"type": "array", "items": ref("Record")},
                            "view": obj(
                                {"id": {"type": "string"}, "name": {"type": "string"}},
                                ["id", "name"],
                            ),
                            "pagination": ref("Pagination"),
                        },
                        ["data", "view", "pagination"],
                    ),
                    "View records",
                    400,
                    404,
                ),
            },
        },
        "/api/webhooks/{skillId}": {
            "parameters": [skill_id],
            "post": {
                "operationId": "triggerSkill",
                "summary": "Trigger a live skill",
                "parameters": [
                    {
                        "name": "x-webhook-signature",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": body({"type": "object"}),
                "responses": answers(
                    obj(
                        {
                            "success": {"type": "boolean"},
                            "skillRunId": {"type": "string"},
                            "message": {"type": "string"},
                        },
                        ["success", "skillRunId", "message"],
                    ),
                    "Skill triggered",
                    400,
                    404,
                    413,
                ),
            },
        },
        "/api/sandbox/skill-runs": {
            "get": {
                "operationId": "listSkillRuns",
                "summary": "Sandbox extension: recorded skill runs",
                "responses": answers(
                    _data(
                        {
                            "type": "array",
                            "items": obj(
                                {
                                    "id": {"type": "string"},
                                    "skill_id": {"type": "string"},
                                    "payload": ANY,
                                    "signed": {"type": "boolean"},
                                    "created_at": {"type": "string"},
                                },
                                ["id", "skill_id", "payload", "signed", "created_at"],
                            ),
                        }
                    ),
                    "Skill runs",
                ),
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "recordsync sandbox record service",
            "version": "1.0.0",
            "description": "Every request body is a JSON object; a string anywhere in it that "
            "holds NUL or a lone surrogate is a 400 (Invalid JSON body). Keys that a body "
            "schema does not list are ignored, except in `fields`.",
        },
        "security": [{"ApiKey": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
            "schemas": {
                "Error": obj({"error": {"type": "string"}}, ["error"]),
                "Record": RECORD,
                "Pagination": PAGINATION,
                "FieldDefinition": FIELD_DEF,
                "ObjectType": OBJECT_TYPE,
                "User": USER,
                "View": VIEW,
                "BatchInput": BATCH_INPUT,
                **{
                    f"BatchInput_{ot.slug}": batch_input(ot, users)
                    for ot in catalog.types.values()
                },
                "BatchResponse": obj(
                    {
                        "results": {"type": "array", "items": BATCH_RESULT},
                        "summary": obj(
                            {
                                k: {"type": "integer", "minimum": 0}
                                for k in ("total", "created", "updated", "failed")
                            },
                            ["total", "created", "updated", "failed"],
                        ),
                    },
                    ["results", "summary"],
                ),
            },
        },
    }

"""Building blocks of the sandbox's OpenAPI document: helpers and component schemas."""

from __future__ import annotations

from typing import Any

from recordsync.sandbox.seed import FIELD_KEYS

JSON = "application/json"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def answers(ok: dict[str, Any], ok_text: str, *errors: int) -> dict[str, Any]:
    texts = {
        400: "Invalid request (validation message or Invalid JSON body)",
        401: "Missing or invalid API key (or webhook signature)",
        404: "Object type, record, view or skill not found",
        405: "Method not allowed",
        413: "Request body too large (over 5 MiB)",
    }
    out: dict[str, Any] = {"200": {"description": ok_text, "content": {JSON: {"schema": ok}}}}
    for code in (*errors, 401, 405):
        out[str(code)] = {"description": texts[code], "content": {JSON: {"schema": ref("Error")}}}
    return out


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {JSON: {"schema": schema}}}


def obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


NULLABLE_STR = {"type": ["string", "null"]}
ANY: dict[str, Any] = {}
RECORD = {
    **obj(
        {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "created_at": {"type": "string"},
            "updated_at": {"type": "string"},
            "owned_by_user_id": NULLABLE_STR,
            "profile_image_url": NULLABLE_STR,
            "deleted_at": NULLABLE_STR,
        },
        ["id", "name", "created_at", "updated_at", "owned_by_user_id", "profile_image_url"],
    ),
    "additionalProperties": True,
}
PAGINATION = obj(
    {
        "total": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer"},
        "offset": {"type": "integer", "minimum": 0},
        "has_more": {"type": "boolean"},
    },
    ["total", "limit", "offset", "has_more"],
)
FIELD_DEF = obj(
    {
        "field_name": {"type": "string"},
        "field_type": {"type": "string"},
        "display_name": NULLABLE_STR,
        "field_order": {"type": ["integer", "null"]},
        "is_required": {"type": "boolean"},
        "select_options": {
            "type": ["array", "null"],
            "items": obj(
                {
                    "label": {"type": "string"},
                    "value": {"type": "string"},
                    "color": NULLABLE_STR,
                    "order": {"type": ["integer", "null"]},
                },
                ["label", "value", "color", "order"],
            ),
        },
        "allow_multiple": {"type": ["boolean", "null"]},
        "related_object_type_id": {"type": ["integer", "null"]},
    },
    list(FIELD_KEYS),
)
OBJECT_TYPE = obj(
    {
        "id": {"type": "integer"},
        "slug": {"type": "string"},
        "display_name": {"type": "string"},
        "plural_display_name": {"type": "string"},
        "description": NULLABLE_STR,
        "icon": NULLABLE_STR,
        "fields": {"type": "array", "items": ref("FieldDefinition")},
    },
    ["id", "slug", "display_name", "plural_display_name", "fields"],
)
USER = obj(
    {
        "id": {"type": "string", "format": "uuid"},
        "full_name": {"type": "string"},
        "access_level": {"type": "string", "enum": ["admin", "member"]},
        "email": NULLABLE_STR,
    },
    ["id", "full_name", "access_level"],
)
VIEW = obj(
    {
        "id": {"type": "string", "format": "uuid"},
        "name": {"type": "string"},
        "view_type": {"type": "string", "enum": ["table", "kanban"]},
        "columns": {"type": "array", "items": {"type": "string"}},
    },
    ["id", "name", "view_type", "columns"],
)
BATCH_RESULT = obj(
    {
        "id": {"type": ["integer", "null"]},
        "status": {"type": "string", "enum": ["created", "updated", "failed"]},
        "error": {"type": "string"},
    },
    ["id", "status"],
)
BATCH_INPUT = obj(
    {
        "name": {"type": "string"},
        "match_by": {"type": "string", "enum": ["id", "email", "name"]},
        "match_value": {"type": ["string", "integer"]},
        "fields": {"type": "object"},
        "profile_image_url": {"type": "string", "format": "uri"},
    },
    ["name"],
)
BATCH_ITEM = {
    "description": "A BatchInput (of the path's type: BatchInput_<slug>). The service takes "
    "any JSON value here: an entry that is not a valid BatchInput fails on its own (status "
    "failed, with an error); the other entries still run."
}

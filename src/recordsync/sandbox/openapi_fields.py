"""Request schemas of one object type for the OpenAPI document, exact to the seed's fields.

Each field's value schema says what validation (:mod:`recordsync.sandbox.validation`)
accepts: select options as an enum, number bounds and decimal places, user ids as an enum,
formats and patterns for email, phone, url, date and date-time; ``fields`` objects take no
other keys. Where a pattern has to be simpler than the check, it is the stricter of the two
(every value the document allows is accepted). What no document can know is which record
ids exist: a relationship field is a nullable integer marked ``x-references`` (its slug), and
an id of no live record of that type is a 400, as a missing record id elsewhere is a 404.
"""

from __future__ import annotations

from typing import Any

from recordsync.sandbox.catalog import FieldInfo, ObjectType
from recordsync.sandbox.query import COLUMN_FIELDS

NO_NUL = "^[^\\x00]*$"
"""Strings never hold NUL (the transport answers 400 ``Invalid JSON body``)."""
TEXT: dict[str, Any] = {"type": "string", "pattern": NO_NUL}
NAME: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": NO_NUL}
URL: dict[str, Any] = {
    "type": "string",
    "pattern": "^https?://[a-z0-9][a-z0-9.-]{0,62}(/[A-Za-z0-9._~/-]*)?$",
    "description": "an http(s) URL with a host",
}
EMAIL: dict[str, Any] = {
    "type": "string",
    "maxLength": 254,
    "pattern": "^[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(\\.[a-z0-9-]{1,63})*\\.[a-z]{2,24}$",
    "description": "an e-mail address (stored lower-cased)",
}
PHONE: dict[str, Any] = {
    "type": "string",
    "pattern": "^\\+?[0-9]{5,20}$",
    "description": "5 to 20 digits; spaces, dots, dashes, slashes, brackets and an extension "
    "(x123) are accepted too",
}
RECORD_ID: dict[str, Any] = {"type": "integer"}
_DATETIME = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$"


def _number(info: FieldInfo) -> dict[str, Any]:
    d = info.definition
    places = {
        "number": d.number_decimal_places,
        "currency": d.currency_decimal_places,
        "percentage": d.percentage_decimal_places,
    }[info.type]
    out: dict[str, Any] = {"type": "integer" if places == 0 else "number"}
    if places:
        out["multipleOf"] = 10.0**-places
        out["description"] = f"at most {places} decimal places"
    if d.number_min is not None:
        out["minimum"] = d.number_min
    if d.number_max is not None:
        out["maximum"] = d.number_max
    return out


def value_schema(info: FieldInfo, user_ids: list[str]) -> dict[str, Any]:
    """What a field takes (null aside)."""
    kind = info.type
    if kind in ("number", "currency", "percentage"):
        return _number(info)
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "select":
        one = {"type": "string", "enum": list(info.options)}
        return {"type": "array", "items": one} if info.multiple else one
    if kind == "relationship":
        ref = {"type": "integer", "x-references": info.related_slug}
        ref["description"] = f"the id of a live {info.related_slug} record"
        return {"type": "array", "items": ref} if info.multiple else ref
    if kind == "user":
        return {"type": "string", "enum": user_ids, "description": "a user id (GET users)"}
    if kind == "email":
        return EMAIL
    if kind == "phone":
        return PHONE
    if kind == "url":
        return URL
    if kind == "date":
        return {"type": "string", "format": "date"}
    if kind == "datetime":
        return {"type": "string", "format": "date-time", "pattern": _DATETIME}
    return TEXT  # text, long_text


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def fields_schema(ot: ObjectType, user_ids: list[str], *, create: bool) -> dict[str, Any]:
    """The ``fields`` object: only the type's fields; null clears one that is not required;
    on create every required field without a default is given."""
    props = {}
    for name, info in ot.fields.items():
        schema = value_schema(info, user_ids)
        props[name] = schema if info.required else _nullable(schema)
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    needed = _needed(ot) if create else []
    if needed:
        out["required"] = needed
    return out


def _needed(ot: ObjectType) -> list[str]:
    return [f.name for f in ot.on_create if f.required and f.definition.default_value is None]


def create_body(ot: ObjectType, user_ids: list[str]) -> dict[str, Any]:
    fields = fields_schema(ot, user_ids, create=True)
    return {
        "type": "object",
        "properties": {
            "name": NAME,
            "fields": fields if _needed(ot) else _nullable(fields),
            "profile_image_url": _nullable(URL),
        },
        "required": ["name", "fields"] if _needed(ot) else ["name"],
    }


def _locator(ot: ObjectType) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``id`` (and, for contacts, ``email``) properties and the rule that one is given."""
    props: dict[str, Any] = {"id": RECORD_ID}
    if not ot.is_contacts:
        return props, {"required": ["id"]}
    props["email"] = TEXT
    return props, {"anyOf": [{"required": ["id"]}, {"required": ["email"]}]}


def patch_body(ot: ObjectType, user_ids: list[str]) -> dict[str, Any]:
    locate, rule = _locator(ot)
    fields = fields_schema(ot, user_ids, create=False)
    something = {
        "anyOf": [
            {"required": ["name"]},
            {"required": ["profile_image_url"]},
            {"required": ["fields"], "properties": {"fields": {"minProperties": 1}}},
        ],
        "description": "at least one thing to update",
    }
    return {
        "type": "object",
        "properties": {
            **locate,
            "name": NAME,
            "fields": _nullable(fields),
            "profile_image_url": _nullable(URL),
        },
        "allOf": [rule, something],
    }


def legacy_body(ot: ObjectType, user_ids: list[str]) -> dict[str, Any]:
    """The single-field update: one branch per field name, its value schema with it."""
    locate, rule = _locator(ot)
    branches = [{"properties": {"fieldName": {"const": "name"}, "fieldValue": NAME}}]
    for name, info in ot.fields.items():
        schema = value_schema(info, user_ids)
        value = schema if info.required else _nullable(schema)
        branches.append({"properties": {"fieldName": {"const": name}, "fieldValue": value}})
    names = ["name", *ot.fields]
    return {
        "type": "object",
        "properties": {**locate, "fieldName": {"type": "string", "enum": names}, "fieldValue": {}},
        "required": ["fieldName", "fieldValue"],
        "allOf": [rule, {"oneOf": branches}],
    }


def sortable(ot: ObjectType) -> list[str]:
    return [*COLUMN_FIELDS, *(n for n in ot.fields if n not in COLUMN_FIELDS)]


def filter_param(ot: ObjectType) -> dict[str, Any]:
    """``filter[<field>]=<value>``: a case-insensitive substring of the field's value (a
    boolean field: true or false), several ANDed; another field name is a 400."""
    flag = {"type": "string", "enum": ["true", "false", "1", "0"]}
    props = {n: flag if n in ot.fields and ot.fields[n].type == "boolean" else TEXT
             for n in sortable(ot)}
    return {
        "name": "filter",
        "in": "query",
        "required": False,
        "style": "deepObject",
        "explode": True,
        "schema": {"type": "object", "properties": props, "additionalProperties": False},
    }


def batch_input(ot: ObjectType, user_ids: list[str]) -> dict[str, Any]:
    """A well-formed batch entry of the type (documentation: the service takes any value as
    an entry, and an entry that is not well formed, or names a record or a user that does
    not exist, or creates a record without its required fields, fails on its own)."""
    by = ["id", "email", "name"] if ot.is_contacts else ["id", "name"]
    return {
        "type": "object",
        "properties": {
            "name": NAME,
            "match_by": {"type": "string", "enum": by},
            "match_value": {
                "type": ["string", "integer"],
                "description": "a record id (an integer or a numeric string) for match_by id",
            },
            "fields": _nullable(fields_schema(ot, user_ids, create=False)),
            "profile_image_url": _nullable(URL),
        },
        "required": ["name"],
        "dependentRequired": {"match_by": ["match_value"]},
    }

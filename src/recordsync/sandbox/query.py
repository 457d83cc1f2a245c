"""List queries: the query string of GET /api/objects/{type} and view definitions turned
into SQL over checked field names only (values always travel as parameters)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recordsync.sandbox.catalog import ObjectType
from recordsync.sandbox.seed import View
from recordsync.sandbox.validation import Invalid

COLUMN_FIELDS = ("id", "name", "created_at", "updated_at", "profile_image_url")
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
MAX_OFFSET = 2**62


def field_sql(ot: ObjectType, name: str) -> str | None:
    """SQL expression of a record field, or None when the type has no such field."""
    if name in COLUMN_FIELDS:
        return name
    if name in ot.fields:  # field names match ^[a-z][a-z0-9_]*$ (seed check)
        return f"json_extract(data, '$.{name}')"
    return None


def _like(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass
class ListQuery:
    where: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    order: str = "id ASC"
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    include_deleted: bool = False

    def sql_where(self, type_id: int) -> tuple[str, list[Any]]:
        parts = ["object_type_id = ?", *self.where]
        if not self.include_deleted:
            parts.append("deleted_at IS NULL")
        return " AND ".join(parts), [type_id, *self.params]


def _int_param(params: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = params.get(key)
    if raw is None:
        return default
    text = raw.strip()
    if text.isascii() and text.isdigit() and len(text) > 18 and high >= MAX_OFFSET:
        return MAX_OFFSET  # a huge offset is an empty page
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        what = (
            "a non-negative integer"
            if high >= MAX_OFFSET
            else (f"an integer between {low} and {high}")
        )
        raise Invalid(key, f"must be {what}")
    return int(text)


def _bool_param(params: Mapping[str, str], key: str) -> bool:
    raw = params.get(key)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value == "true":
        return True
    if value == "false":
        return False
    raise Invalid(key, "must be true or false")


def page(params: Mapping[str, str]) -> tuple[int, int]:
    limit = _int_param(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    offset = _int_param(params, "offset", 0, 0, MAX_OFFSET)
    return limit, offset


def _filter(ot: ObjectType, q: ListQuery, name: str, value: str) -> None:
    key = f"filter[{name}]"
    expr = field_sql(ot, name)
    if expr is None:
        raise Invalid(key, "unknown field")
    info = ot.fields.get(name)
    if info is not None and info.type == "boolean":
        flag = value.strip().lower()
        if flag not in ("true", "false", "1", "0"):
            raise Invalid(key, "must be true or false")
        q.where.append(f"{expr} = ?")
        q.params.append(1 if flag in ("true", "1") else 0)
        return
    q.where.append(f"CAST({expr} AS TEXT) LIKE ? ESCAPE '\\'")
    q.params.append(_like(value))


def from_params(ot: ObjectType, params: Mapping[str, str], keys: list[str]) -> ListQuery:
    """A list query from the query string (``keys``: the parameter names, in order)."""
    q = ListQuery()
    q.limit, q.offset = page(params)
    q.include_deleted = _bool_param(params, "include_deleted")
    search = params.get("search")
    if search:
        if ot.is_contacts:
            q.where.append(
                "(name LIKE ? ESCAPE '\\' OR json_extract(data, '$.email') LIKE ? ESCAPE '\\')"
            )
            q.params.extend([_like(search), _like(search)])
        else:
            q.where.append("name LIKE ? ESCAPE '\\'")
            q.params.append(_like(search))
    for key in keys:
        if key.startswith("filter[") and key.endswith("]"):
            _filter(ot, q, key[len("filter[") : -1], params[key])
    sort_by = params.get("sort_by", "id")
    expr = field_sql(ot, sort_by)
    if expr is None:
        raise Invalid("sort_by", f"unknown field {sort_by!r}")
    direction = params.get("sort_order", "asc").strip().lower()
    if direction not in ("asc", "desc"):
        raise Invalid("sort_order", "must be asc or desc")
    q.order = f"{expr} {direction.upper()}, id ASC" if expr != "id" else f"id {direction.upper()}"
    return q


_OPS = {"equals": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def from_view(ot: ObjectType, view: View, params: Mapping[str, str]) -> ListQuery:
    """A list query running a view: its filters (ANDed) and sort, paged by the request."""
    q = ListQuery()
    q.limit, q.offset = page(params)
    for f in view.filters:
        expr = field_sql(ot, f.field)
        assert expr is not None  # the seed checks view fields
        if f.operator in _OPS:
            q.where.append(f"{expr} {_OPS[f.operator]} ?")
            q.params.append(f.value)
        elif f.operator == "not_equals":
            q.where.append(f"({expr} IS NULL OR {expr} != ?)")
            q.params.append(f.value)
        elif f.operator == "contains":
            q.where.append(f"CAST({expr} AS TEXT) LIKE ? ESCAPE '\\'")
            q.params.append(_like(str(f.value)))
        elif f.operator == "is_empty":
            q.where.append(f"({expr} IS NULL OR {expr} IN ('', '[]'))")
        else:
            q.where.append(f"({expr} IS NOT NULL AND {expr} NOT IN ('', '[]'))")
    orders = []
    for s in view.sort:
        expr = field_sql(ot, s.field)
        orders.append(f"{expr} {s.direction.upper()}")
    q.order = ", ".join([*orders, "id ASC"])
    return q

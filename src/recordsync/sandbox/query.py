"""List queries: the query string of GET /api/objects/{type} and view definitions turned
into SQL over checked field names only (values always travel as parameters).

- ``search`` and ``filter[...]`` are substring matches under Unicode case folding (``ZOË``
  finds ``Zoë``; ``ß`` matches ``SS``), through the store's ``rs_fold`` SQL function; a NUL
  character in either is a 400.
- A relationship field reads as the record's JSON shows it: a reference to a soft-deleted
  record is empty (null, or dropped from an array) for filters and sorting too.
- ``pagination.offset`` echoes the offset asked for, however large (the SQL offset is capped).
"""

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


def field_sql(ot: ObjectType, name: str) -> str | None:
    """SQL expression of a record field as the record reads, or None when the type has no
    such field. A relationship to a soft-deleted record reads as empty, as in the record's JSON."""
    if name in COLUMN_FIELDS:
        return name
    info = ot.fields.get(name)
    if info is None:
        return None
    raw = f"json_extract(records.data, '$.{name}')"  # names match ^[a-z][a-z0-9_]*$ (seed)
    if info.type != "relationship":
        return raw
    if info.multiple:
        return (
            f"(SELECT json_group_array(j.value) FROM json_each(records.data, '$.{name}') j"
            " WHERE EXISTS (SELECT 1 FROM records r2 WHERE r2.id = j.value"
            " AND r2.deleted_at IS NULL))"
        )
    return f"(SELECT r2.id FROM records r2 WHERE r2.id = {raw} AND r2.deleted_at IS NULL)"


def _contains(expr: str) -> str:
    """SQL: ``expr`` (as text) contains the parameter, which is already case folded."""
    return f"instr(rs_fold(CAST({expr} AS TEXT)), ?) > 0"


def _needle(key: str, value: str) -> str:
    if "\x00" in value:
        raise Invalid(key, "must not contain a NUL character")
    return value.casefold()


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


def _int_param(
    params: Mapping[str, str], key: str, default: int, low: int, high: int | None
) -> int:
    """A plain-digits parameter in ``low..high`` (``high`` None: no upper bound)."""
    raw = params.get(key)
    if raw is None:
        return default
    text = raw.strip()
    digits = text.isascii() and text.isdigit() and len(text) <= 4000
    if not digits or int(text) < low or (high is not None and int(text) > high):
        what = "a non-negative integer" if high is None else f"an integer between {low} and {high}"
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
    offset = _int_param(params, "offset", 0, 0, None)
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
    q.where.append(_contains(expr))
    q.params.append(_needle(key, value))


def from_params(ot: ObjectType, params: Mapping[str, str], keys: list[str]) -> ListQuery:
    """A list query from the query string (``keys``: the parameter names, in order)."""
    q = ListQuery()
    q.limit, q.offset = page(params)
    q.include_deleted = _bool_param(params, "include_deleted")
    search = params.get("search")
    if search:
        needle = _needle("search", search)
        if ot.is_contacts:
            email = _contains("json_extract(data, '$.email')")
            q.where.append(f"({_contains('name')} OR {email})")
            q.params.extend([needle, needle])
        else:
            q.where.append(_contains("name"))
            q.params.append(needle)
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
            q.where.append(_contains(expr))
            q.params.append(str(f.value).casefold())
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

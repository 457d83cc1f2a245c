"""Validation of field values, one function per field type.

Each check returns the value to store (e.g. an email lower-cased) or raises
:class:`Invalid`, whose message is the contract's ``Validation failed: <field>: <reason>``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from recordsync.sandbox.catalog import FieldInfo

_EMAIL = re.compile(r"^[^@\s\"(),:;<>\[\\\]]+@[^@\s\"(),:;<>\[\\\]]+\.[^@\s\"(),:;<>\[\\\].]+$")
_PHONE = re.compile(r"^\+?[0-9().\-/ ]+((x|ext\.?) ?[0-9]{1,6})?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$"
)

LiveTypeOf = Callable[[int], int | None]
"""Given a record id, the object type id of that record if it exists and is not deleted."""


class Invalid(Exception):
    """A request value breaks a rule. ``str()`` is the error message sent to the client."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Validation failed: {field}: {reason}")


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def check_url(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(name, "must be a string")
    text = value.strip()
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok or any(c.isspace() for c in text):
        raise Invalid(name, "invalid URL (must be http or https)")
    return text


def _number(info: FieldInfo, value: Any) -> int | float:
    d = info.definition
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(info.name, "must be a number")
    number: int | float = value
    if isinstance(value, float) and not math.isfinite(value):
        raise Invalid(info.name, "must be a finite number")
    if d.number_min is not None and value < d.number_min:
        raise Invalid(info.name, f"must be >= {_plain(d.number_min)}")
    if d.number_max is not None and value > d.number_max:
        raise Invalid(info.name, f"must be <= {_plain(d.number_max)}")
    places = {
        "number": d.number_decimal_places,
        "currency": d.currency_decimal_places,
        "percentage": d.percentage_decimal_places,
    }[info.type]
    if places is not None and isinstance(value, float):
        try:
            exponent = Decimal(repr(value)).normalize().as_tuple().exponent
        except InvalidOperation:  # pragma: no cover - repr of a finite float always parses
            exponent = 0
        if isinstance(exponent, int) and -exponent > places:
            raise Invalid(info.name, f"must have at most {places} decimal places")
        if places == 0 and value.is_integer() and abs(value) < 2**53:
            return int(value)
    return number


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _select_one(info: FieldInfo, value: Any) -> str:
    if not isinstance(value, str) or value not in info.option_set:
        raise Invalid(info.name, f"{_show(value)} is not an option ({', '.join(info.options)})")
    return value


def _datetime(name: str, value: str) -> str:
    text = value.strip()
    if not _DATETIME.match(text):
        raise Invalid(name, "must be an ISO 8601 date-time")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise Invalid(name, "must be an ISO 8601 date-time") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError as exc:
        raise Invalid(name, "must be an ISO 8601 date-time") from exc
    stamp = parsed.strftime("%Y-%m-%dT%H:%M:%S")
    if parsed.microsecond:
        stamp += f".{parsed.microsecond // 1000:03d}"
    return stamp + "Z"


def check_value(info: FieldInfo, value: Any, users: frozenset[str], live_type: LiveTypeOf) -> Any:
    """Check one value of a field (not null) and return what to store."""
    name, kind = info.name, info.type
    if kind in ("number", "currency", "percentage"):
        return _number(info, value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise Invalid(name, "must be true or false")
        return value
    if kind == "select":
        if info.multiple:
            if not isinstance(value, list):
                raise Invalid(name, "must be an array of options")
            return [_select_one(info, v) for v in value]
        return _select_one(info, value)
    if kind == "relationship":
        if info.multiple:
            if not isinstance(value, list):
                raise Invalid(name, "must be an array of record ids")
            return [_related(info, v, live_type) for v in value]
        return _related(info, value, live_type)
    if not isinstance(value, str):
        raise Invalid(name, "must be a string")
    if kind in ("text", "long_text"):
        return value
    if kind == "email":
        text = value.strip()
        if len(text) > 254 or not _EMAIL.match(text):
            raise Invalid(name, "invalid email format")
        return text.lower()
    if kind == "phone":
        text = value.strip()
        digits = sum(c.isdigit() for c in text)
        if not _PHONE.match(text) or not 5 <= digits <= 20:
            raise Invalid(name, "invalid phone number")
        return text
    if kind == "url":
        return check_url(name, value)
    if kind == "date":
        try:
            if not _DATE.match(value):
                raise ValueError(value)
            date.fromisoformat(value)
        except ValueError as exc:
            raise Invalid(name, "must be a date (YYYY-MM-DD)") from exc
        return value
    if kind == "datetime":
        return _datetime(name, value)
    if kind == "user":
        if value not in users:
            raise Invalid(name, "unknown user")
        return value
    raise Invalid(name, f"unsupported field type {kind}")  # pragma: no cover - seed forbids it


def _related(info: FieldInfo, value: Any, live_type: LiveTypeOf) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(info.name, "must be a record id (integer)")
    target = info.definition.related_object_type_id
    if not -(2**63) <= value < 2**63 or live_type(value) != target:
        raise Invalid(info.name, f"no {info.related_slug} record {value}")
    return value


def default_of(info: FieldInfo) -> Any:
    """The field's ``default_value`` (a string in the schema) as a value of its type."""
    raw = info.definition.default_value
    if raw is None:
        return None
    kind = info.type
    if kind in ("number", "currency", "percentage"):
        number = float(raw)
        return int(number) if number.is_integer() else number
    if kind == "boolean":
        return raw.strip().lower() == "true"
    if kind == "relationship":
        return int(raw)
    if kind == "select" and info.multiple:
        return [v.strip() for v in raw.split(",") if v.strip()]
    return raw

"""A record read back compared with what the run sent to it, after the normalisations the
service documents (``service-contract.md``), field by field.

What counts as the same value (everything else must be equal as JSON reads it):

- ``email``: trimmed and compared case-insensitively (the service stores emails trimmed and
  lower-cased);
- ``phone``: by its digits (a service may format a number: ``+1 (555) 010-0200`` and
  ``15550100200`` are the same number);
- ``url`` and ``profile_image_url``: trimmed;
- ``datetime``: the same instant, to the millisecond (the service stores UTC with a ``Z``
  and keeps milliseconds: ``2026-01-02T03:04:05+02:00`` is ``2026-01-02T01:04:05.000Z``);
- numbers: the same number (``42`` and ``42.0``);
- a multi-select or a multi-record relationship: the same values in any order (an order
  the service does not promise to keep);
- ``user``: the same id whatever its case (ids are UUIDs);
- a value sent as ``null`` and a field the record does not show.

Fields the row did not send (blank cells: "no value") are not compared; neither are the
record's own keys (``id``, ``created_at``, ...).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, NamedTuple

from recordsync.validate.schema import ObjectType

ABSENT = object()
"""A key the record read back does not have."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_SHOWN = 200
"""Characters of a value shown in the report (the CSV has them whole)."""


class FieldDiff(NamedTuple):
    """One field of a record read back that differs from what was sent."""

    field: str
    sent: Any
    stored: Any
    """:data:`ABSENT` when the record has no such key."""


def expected_values(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """The values a record should hold after these batch inputs, in order (later ones win;
    ``fields`` are flat on a record, beside ``name`` and ``profile_image_url``)."""
    out: dict[str, Any] = {}
    for p in payloads:
        if "name" in p:
            out["name"] = p["name"]
        if "profile_image_url" in p:
            out["profile_image_url"] = p["profile_image_url"]
        fields = p.get("fields")
        if isinstance(fields, dict):
            out.update(fields)
    return out


def differences(
    expected: dict[str, Any], record: dict[str, Any], object_type: ObjectType | None
) -> list[FieldDiff]:
    """The fields of ``expected`` whose value ``record`` does not hold, in ``expected``'s
    order."""
    out: list[FieldDiff] = []
    for name, sent in expected.items():
        stored = record.get(name, ABSENT)
        fdef = object_type.field(name) if object_type is not None else None
        kind = fdef.type if fdef is not None else ("url" if name == "profile_image_url" else "")
        multiple = fdef.allow_multiple if fdef is not None else False
        if not same(kind, multiple, sent, stored):
            out.append(FieldDiff(name, sent, stored))
    return out


def same(kind: str, multiple: bool, sent: Any, stored: Any) -> bool:
    """Whether ``stored`` holds ``sent`` for a field of type ``kind``."""
    if sent is None:
        return stored is None or stored is ABSENT
    if stored is None or stored is ABSENT:
        return False
    if isinstance(sent, list) or multiple:
        if not isinstance(sent, list) or not isinstance(stored, list):
            return False
        return {_key(kind, v) for v in sent} == {_key(kind, v) for v in stored}
    return bool(_key(kind, sent) == _key(kind, stored))


def _key(kind: str, value: Any) -> Any:
    """The form under which two values of a field of type ``kind`` are equal."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if not isinstance(value, str):
        return ("json", json.dumps(value, sort_keys=True, default=str))
    if kind == "email":
        return ("text", value.strip().lower())
    if kind == "phone":
        return ("phone", "".join(c for c in value if c.isdigit()))
    if kind in ("url", "user"):
        text = value.strip()
        return ("text", text.lower() if kind == "user" else text)
    if kind == "datetime":
        moment = _instant(value)
        return ("text", value) if moment is None else ("instant", moment)
    if kind in ("number", "currency", "percentage", "relationship"):
        try:
            return ("number", float(value))
        except ValueError:
            return ("text", value)
    return ("text", value)


def _instant(text: str) -> int | None:
    """Milliseconds since the epoch (no zone: UTC), or None if ``text`` is not ISO 8601."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH  # exact: no float on the way
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def shown(value: Any) -> str:
    """A value as the report shows it: JSON, ``(absent)`` for a key the record lacks."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"

"""Record operations on top of the store: validate, deduplicate, write, render.

HTTP-free: routes parse requests and call these methods inside one store transaction.
Failures are :class:`~recordsync.sandbox.validation.Invalid` (400) or :class:`NotFound`
(404); they are raised before anything is written.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from recordsync.sandbox import normalize
from recordsync.sandbox.catalog import Catalog, ObjectType
from recordsync.sandbox.store import NO_KEYS, Keys, Row, Store
from recordsync.sandbox.validation import Invalid, check_url, check_value, default_of

MAX_ID = 2**63 - 1


class NotFound(Exception):
    """404 with the given message (``Object not found`` unless said otherwise)."""

    def __init__(self, message: str = "Object not found") -> None:
        super().__init__(message)
        self.message = message


_last_stamp: tuple[int, str] = (0, "")


def utc_now(offset_ms: int = 0) -> str:
    """Now (moved by ``offset_ms``) as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (formatted once per
    millisecond)."""
    global _last_stamp
    ms = time.time_ns() // 1_000_000 + offset_ms
    if ms != _last_stamp[0]:
        seconds, millis = divmod(ms, 1000)
        stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _last_stamp = (ms, f"{stamp}.{millis:03d}Z")
    return _last_stamp[1]


def _later_than(now: str, previous: str) -> str:
    """``now``, or ``previous`` + 1 ms when the clock has not moved past it."""
    if now > previous:
        return now
    stamp = datetime.strptime(previous, "%Y-%m-%dT%H:%M:%S.%fZ") + timedelta(milliseconds=1)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def record_id(value: Any, field: str = "id") -> int:
    """A record id from a request (an integer; ``None`` means missing)."""
    if value is None:
        raise Invalid(field, "required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(field, "must be an integer")
    return value


class RecordService:
    def __init__(self, catalog: Catalog, store: Store) -> None:
        self.catalog = catalog
        self.store = store
        self._users = catalog.user_ids
        self._live_type_of = store.live_type_of
        self.stamp_offset_ms = 0
        """Added to the clock that stamps ``created_at`` / ``updated_at`` (a test knob: the
        ``skew`` fault of :mod:`recordsync.sandbox.faults`)."""

    # --- checks ---------------------------------------------------------------------------
    def check_name(self, name: Any) -> str:
        if name is None or name == "":
            raise Invalid("name", "required")
        if not isinstance(name, str):
            raise Invalid("name", "must be a string")
        return name

    def check_fields(self, ot: ObjectType, fields: Any) -> dict[str, Any]:
        """Checked values of ``fields`` in request order (``None`` clears a field)."""
        if fields is None:
            return {}
        if not isinstance(fields, dict):
            raise Invalid("fields", "must be an object")
        out: dict[str, Any] = {}
        for key, value in fields.items():
            info = ot.fields.get(key)
            if info is None:
                raise Invalid(key, "unknown field")
            if value is None:
                if info.required:
                    raise Invalid(key, "required")
                out[key] = None
            else:
                out[key] = check_value(info, value, self._users, self._live_type_of)
        return out

    def check_image(self, image: Any) -> str | None:
        return None if image is None else check_url("profile_image_url", image)

    def keys_of(self, ot: ObjectType, name: str, data: dict[str, Any]) -> Keys:
        if ot.is_contacts:
            return (normalize.email_key(data.get("email")), None, None, None)
        if ot.is_companies:
            return (
                None,
                normalize.domain_key(data.get("domain")),
                normalize.linkedin_key(data.get("linkedin_url")),
                normalize.name_key(name),
            )
        return NO_KEYS

    # --- look-ups -------------------------------------------------------------------------
    def get(self, ot: ObjectType, rid: int) -> Row:
        row = self.store.get(rid, ot.id) if 0 < rid <= MAX_ID else None
        if row is None:
            raise NotFound()
        return row

    def find_email(self, ot: ObjectType, email: Any) -> Row | None:
        key = normalize.email_key(email)
        return self.store.find_by_key(ot.id, "email_norm", key) if key else None

    def dedup_match(
        self,
        ot: ObjectType,
        name: str,
        values: dict[str, Any],
        absent: tuple[str, str] | None = None,
    ) -> Row | None:
        """The live record a create turns into an update of, if any (first rule wins).
        ``absent``: a (column, key) look-up this request already made and found nothing."""
        email, domain, linkedin, name_key = self.keys_of(ot, name, values)
        for column, key in (
            ("email_norm", email),
            ("domain_norm", domain),
            ("linkedin_norm", linkedin),
            ("name_norm", name_key),
        ):
            if key is not None and (column, key) != absent:
                row = self.store.find_by_key(ot.id, column, key)
                if row is not None:
                    return row
        return None

    # --- writes ---------------------------------------------------------------------------
    def create(
        self,
        ot: ObjectType,
        name: Any,
        fields: Any,
        image: Any = None,
        absent: tuple[str, str] | None = None,
    ) -> tuple[int, str]:
        """PUT and batch creation: ``(id, "created" | "updated")`` (a dedup hit updates)."""
        name = self.check_name(name)
        values = self.check_fields(ot, fields)
        image = self.check_image(image)
        for info in ot.on_create:
            fname = info.name
            if values.get(fname) is None and info.definition.default_value is not None:
                values[fname] = default_of(info)
            if info.required and values.get(fname) is None:
                raise Invalid(fname, "required")
        if ot.is_contacts or ot.is_companies:
            match = self.dedup_match(ot, name, values, absent)
            if match is not None:
                self.update(ot, match, name, values, image, image_given=image is not None)
                return match.id, "updated"
        data = {k: v for k, v in values.items() if v is not None}
        now = utc_now(self.stamp_offset_ms)
        rid = self.store.insert(ot.id, name, image, data, self.keys_of(ot, name, data), now)
        return rid, "created"

    def update(
        self,
        ot: ObjectType,
        row: Row,
        name: str | None,
        values: dict[str, Any],
        image: str | None = None,
        *,
        image_given: bool = False,
    ) -> Row:
        """Apply checked values to ``row`` (keys not given are kept) and write it."""
        name_changed = name is not None and name != row.name
        if name is not None:
            row.name = name
        if image_given:
            row.profile_image_url = image
        for key, value in values.items():
            if value is None:
                row.data.pop(key, None)
            else:
                row.data[key] = value
        row.updated_at = _later_than(utc_now(self.stamp_offset_ms), row.updated_at)
        self.store.update(row, self.keys_of(ot, row.name, row.data), name_changed=name_changed)
        return row

    def delete(self, ot: ObjectType, rid: int) -> None:
        row = self.get(ot, rid)
        self.store.soft_delete(row.id, _later_than(utc_now(self.stamp_offset_ms), row.updated_at))

    # --- rendering ------------------------------------------------------------------------
    def render(
        self, ot: ObjectType, rows: list[Row], *, include_deleted: bool = False
    ) -> list[dict[str, Any]]:
        """Flat records; relationships to deleted records read as null (or are dropped)."""
        rel_fields = [f for f in ot.fields.values() if f.type == "relationship"]
        live: set[int] = set()
        if rel_fields:
            wanted: list[int] = []
            for row in rows:
                for f in rel_fields:
                    v = row.data.get(f.name)
                    if isinstance(v, list):
                        wanted.extend(v)
                    elif v is not None:
                        wanted.append(v)
            live = self.store.live_ids(wanted)
        out = []
        for row in rows:
            rec: dict[str, Any] = {
                "id": row.id,
                "name": row.name,
                "created_at": row.created_at,
                "updated_at": row.updated_at,
                "owned_by_user_id": row.data.get("owned_by_user_id"),
                "profile_image_url": row.profile_image_url,
            }
            for fname in ot.fields:
                rec[fname] = row.data.get(fname)
            for f in rel_fields:
                v = rec[f.name]
                if isinstance(v, list):
                    rec[f.name] = [i for i in v if i in live]
                elif v is not None and v not in live:
                    rec[f.name] = None
            if include_deleted:
                rec["deleted_at"] = row.deleted_at
            out.append(rec)
        return out

    def render_one(self, ot: ObjectType, row: Row) -> dict[str, Any]:
        return self.render(ot, [row])[0]

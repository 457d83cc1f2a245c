"""The live schema (``GET /api/meta/schema``) as typed, looked-up-able objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SYSTEM_FIELDS: dict[str, dict[str, str]] = {
    "contacts": {"email": "email", "phone": "phone", "owned_by_user_id": "user"},
    "companies": {
        "domain": "text",
        "linkedin_url": "url",
        "phone": "phone",
        "owned_by_user_id": "user",
    },
}
CUSTOM_SYSTEM_FIELDS = {"owned_by_user_id": "user"}
BUILTIN_SINGULAR = {"contact": "contacts", "company": "companies"}


@dataclass(frozen=True, slots=True)
class SelectOption:
    value: str
    label: str


@dataclass(frozen=True, slots=True)
class FieldDef:
    """One field definition; ``decimal_places`` is the one that applies to the type."""

    name: str
    type: str
    required: bool = False
    allow_multiple: bool = False
    options: tuple[SelectOption, ...] = ()
    number_min: float | None = None
    number_max: float | None = None
    decimal_places: int | None = None
    related_object_type_id: int | None = None
    default_value: Any = None

    @classmethod
    def from_api(cls, d: Mapping[str, Any]) -> FieldDef:
        ftype = str(d.get("field_type") or "text")
        places_key = {
            "currency": "currency_decimal_places",
            "percentage": "percentage_decimal_places",
        }.get(ftype, "number_decimal_places")
        places = d.get(places_key)
        if places is None and ftype in ("currency", "percentage"):
            places = d.get("number_decimal_places")
        options = tuple(
            SelectOption(str(o.get("value")), str(o.get("label") or o.get("value")))
            for o in (d.get("select_options") or [])
            if isinstance(o, Mapping) and o.get("value") is not None
        )
        return cls(
            name=str(d["field_name"]),
            type=ftype,
            required=bool(d.get("is_required")),
            allow_multiple=bool(d.get("allow_multiple")),
            options=options,
            number_min=_num(d.get("number_min")),
            number_max=_num(d.get("number_max")),
            decimal_places=int(places) if places is not None else None,
            related_object_type_id=d.get("related_object_type_id"),
            default_value=d.get("default_value"),
        )


def _num(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class ObjectType:
    id: int | None
    slug: str
    display_name: str
    singular: str | None
    fields: dict[str, FieldDef] = field(default_factory=dict)

    def field(self, name: str) -> FieldDef | None:
        return self.fields.get(name)


@dataclass(frozen=True, slots=True)
class Schema:
    """Object types by slug (singular forms also resolve)."""

    types: dict[str, ObjectType]
    aliases: dict[str, str]

    @classmethod
    def from_api(cls, data: Iterable[Mapping[str, Any]] | Mapping[str, Any]) -> Schema:
        """Build from the ``data`` list of GET /api/meta/schema (or the whole response)."""
        if isinstance(data, Mapping):
            data = data.get("data") or []
        types: dict[str, ObjectType] = {}
        aliases: dict[str, str] = dict(BUILTIN_SINGULAR)
        for d in data:
            slug = str(d["slug"])
            fields = {
                f["field_name"]: FieldDef.from_api(f)
                for f in (d.get("fields") or [])
                if isinstance(f, Mapping) and "field_name" in f
            }
            for name, ftype in SYSTEM_FIELDS.get(slug, CUSTOM_SYSTEM_FIELDS).items():
                fields.setdefault(name, FieldDef(name=name, type=ftype))
            singular = d.get("singular_slug") or d.get("singular") or None
            display = str(d.get("display_name") or slug)
            types[slug] = ObjectType(d.get("id"), slug, display, singular, fields)
            for alias in (singular, display.lower().replace(" ", "_")):
                if alias and alias != slug:
                    aliases.setdefault(str(alias), slug)
        return cls(types, {a: s for a, s in aliases.items() if s in types})

    def object_type(self, name: str) -> ObjectType | None:
        return self.types.get(name) or self.types.get(self.aliases.get(name, ""))

    @property
    def slugs(self) -> list[str]:
        return sorted(self.types)

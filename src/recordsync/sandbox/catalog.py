"""The runtime view of a seed: object types with their field maps, users, views, skills.

Built once per app so that no request re-parses the schema: field definitions are looked
up in dicts, select options in sets, and the schema/users answers are prepared up front.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recordsync.sandbox.seed import FieldDef, ObjectTypeDef, Seed, Skill, View

CONTACTS_ID = 1
COMPANIES_ID = 2
SYSTEM_COLUMNS = ("id", "name", "created_at", "updated_at", "profile_image_url")
"""Record keys kept in their own columns rather than among the field values."""


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """A field definition plus what validation needs, precomputed."""

    definition: FieldDef
    name: str
    type: str
    multiple: bool = False
    required: bool = False
    options: tuple[str, ...] = ()
    option_set: frozenset[str] = frozenset()
    related_slug: str | None = None


@dataclass(frozen=True, slots=True)
class ObjectType:
    id: int
    slug: str
    singular: str | None
    kind: str
    """How messages name one record: ``contact``, ``company``, or the custom type's
    singular display name in lower case."""
    definition: ObjectTypeDef
    fields: dict[str, FieldInfo] = field(default_factory=dict)
    on_create: tuple[FieldInfo, ...] = ()
    """Fields that are required or have a default value: the ones a create must look at."""

    @property
    def is_contacts(self) -> bool:
        return self.id == CONTACTS_ID

    @property
    def is_companies(self) -> bool:
        return self.id == COMPANIES_ID

    def as_api(self) -> dict[str, Any]:
        d = self.definition
        return {
            "id": self.id,
            "slug": self.slug,
            "singular_slug": self.singular,
            "display_name": d.display_name,
            "plural_display_name": d.plural_display_name,
            "description": d.description,
            "icon": d.icon,
            "fields": [f.as_api(i) for i, f in enumerate(d.fields)],
        }


class Catalog:
    """Object types by id and by path name (plural slug, or singular where declared)."""

    def __init__(self, seed: Seed) -> None:
        self.seed = seed
        ids = seed.type_ids()
        slug_of = {i: slug for slug, i in ids.items()}
        self.types: dict[int, ObjectType] = {}
        self.by_name: dict[str, ObjectType] = {}
        for t in seed.object_types:
            kinds = {"contacts": "contact", "companies": "company"}
            kind = kinds.get(t.slug, t.display_name.lower())
            infos = {}
            for f in t.fields:
                opts = tuple(o.value for o in f.select_options or ())
                related = slug_of.get(f.related_object_type_id or 0)
                infos[f.field_name] = FieldInfo(
                    f,
                    f.field_name,
                    f.field_type,
                    bool(f.allow_multiple),
                    f.is_required,
                    opts,
                    frozenset(opts),
                    related,
                )
            on_create = tuple(
                f
                for f in infos.values()
                if f.definition.is_required or f.definition.default_value is not None
            )
            ot = ObjectType(ids[t.slug], t.slug, t.singular_slug, kind, t, infos, on_create)
            self.types[ot.id] = ot
            self.by_name[t.slug] = ot
            if t.singular_slug:
                self.by_name[t.singular_slug] = ot
        self.user_ids = frozenset(str(u.id) for u in seed.users)
        self.views: dict[str, View] = {str(v.id): v for v in seed.views}
        self.skills: dict[str, Skill] = {str(s.id): s for s in seed.skills}
        self.schema_answer = {"data": [self.types[i].as_api() for i in sorted(self.types)]}
        self.users_answer = {
            "data": [
                {
                    "id": str(u.id),
                    "full_name": u.full_name,
                    "access_level": u.access_level,
                    "email": u.email,
                }
                for u in seed.users
            ]
        }

    def resolve(self, name: str) -> ObjectType | None:
        return self.by_name.get(name)

    def views_of(self, ot: ObjectType) -> list[View]:
        return [v for v in self.views.values() if self.by_name[v.object_type] is ot]

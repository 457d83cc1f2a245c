"""The seed file: object types, field definitions, users, views and skills (strict YAML).

The file is parsed into pydantic models that reject unknown keys; every error becomes a
:class:`~recordsync.core.errors.ConfigError` naming the file, the line and the key path.
Object type ids are derived: contacts 1, companies 2, custom types from 3 in file order.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from recordsync.config.yamlmarks import parse_yaml
from recordsync.core.errors import ConfigError

FieldType = Literal[
    "text",
    "long_text",
    "number",
    "currency",
    "percentage",
    "select",
    "email",
    "phone",
    "url",
    "date",
    "datetime",
    "boolean",
    "relationship",
    "user",
]
RelationshipType = Literal["one_to_one", "one_to_many", "many_to_one", "many_to_many"]
SYSTEM_SLUGS = ("contacts", "companies")
FIELD_KEYS = (
    "field_name",
    "display_name",
    "field_type",
    "field_order",
    "is_required",
    "description",
    "select_options",
    "allow_multiple",
    "related_object_type_id",
    "relationship_type",
    "number_min",
    "number_max",
    "number_decimal_places",
    "currency_decimal_places",
    "percentage_decimal_places",
    "value_scale",
    "default_value",
    "visibility_type",
)
"""The 18 keys of a field definition, in the seed table's order."""
RESERVED_NAMES = frozenset(
    {"id", "name", "created_at", "updated_at", "deleted_at", "profile_image_url"}
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SelectOption(_Strict):
    label: str
    value: str
    color: str | None = Field(default=None, pattern=r"^#[0-9A-Fa-f]{6}$")
    order: int | None = None


class FieldDef(_Strict):
    field_name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    display_name: str | None = None
    field_type: FieldType
    field_order: int | None = None
    is_required: bool = False
    description: str | None = None
    select_options: list[SelectOption] | None = None
    allow_multiple: bool | None = None
    related_object_type_id: int | None = None
    relationship_type: RelationshipType | None = None
    number_min: float | None = None
    number_max: float | None = None
    number_decimal_places: int | None = Field(default=None, ge=0)
    currency_decimal_places: int | None = Field(default=None, ge=0)
    percentage_decimal_places: int | None = Field(default=None, ge=0)
    value_scale: str | None = None
    default_value: str | None = None
    visibility_type: str | None = "visible"

    @model_validator(mode="after")
    def _check_type_keys(self) -> FieldDef:
        if self.field_name in RESERVED_NAMES:
            raise ValueError(f"field_name {self.field_name!r} is reserved")
        if self.field_type == "select" and not self.select_options:
            raise ValueError("a select field needs select_options")
        if self.field_type != "select" and self.select_options is not None:
            raise ValueError("select_options apply to select fields only")
        if self.field_type == "relationship":
            if self.related_object_type_id is None or self.relationship_type is None:
                raise ValueError(
                    "a relationship needs related_object_type_id and relationship_type"
                )
        elif self.related_object_type_id is not None or self.relationship_type is not None:
            raise ValueError("related_object_type_id/relationship_type apply to relationships only")
        if self.allow_multiple and self.field_type not in ("select", "relationship"):
            raise ValueError("allow_multiple applies to select and relationship fields only")
        return self

    def as_api(self, order: int) -> dict[str, Any]:
        """The field definition as GET /api/meta/schema shows it: all 18 keys."""
        out = self.model_dump()
        out["display_name"] = self.display_name or self.field_name.replace("_", " ").capitalize()
        out["field_order"] = self.field_order if self.field_order is not None else order
        if self.field_type in ("select", "relationship") and self.allow_multiple is None:
            out["allow_multiple"] = False
        return {key: out[key] for key in FIELD_KEYS}


class ObjectTypeDef(_Strict):
    slug: str = Field(pattern=r"^[a-z][a-z0-9_\-]*$")
    singular_slug: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_\-]*$")
    display_name: str
    plural_display_name: str
    description: str | None = None
    icon: str | None = None
    fields: list[FieldDef]

    @field_validator("fields")
    @classmethod
    def _unique_fields(cls, fields: list[FieldDef]) -> list[FieldDef]:
        seen: set[str] = set()
        for f in fields:
            if f.field_name in seen:
                raise ValueError(f"field_name {f.field_name!r} appears twice")
            seen.add(f.field_name)
        return fields


class User(_Strict):
    id: UUID
    full_name: str
    access_level: Literal["admin", "member"]
    email: str | None = None


class ViewFilter(_Strict):
    field: str
    operator: Literal[
        "equals", "not_equals", "contains", "gt", "gte", "lt", "lte", "is_empty", "is_not_empty"
    ] = "equals"
    value: str | int | float | bool | None = None


class ViewSort(_Strict):
    field: str
    direction: Literal["asc", "desc"] = "asc"


class View(_Strict):
    id: UUID
    object_type: str
    name: str
    view_type: Literal["table", "kanban"] = "table"
    columns: list[str]
    filters: list[ViewFilter] = []
    sort: list[ViewSort] = []


class Skill(_Strict):
    id: UUID
    name: str
    status: Literal["live", "paused"]


class Seed(_Strict):
    users: list[User] = []
    object_types: list[ObjectTypeDef]
    views: list[View] = []
    skills: list[Skill] = []

    @model_validator(mode="after")
    def _check_references(self) -> Seed:
        slugs = [t.slug for t in self.object_types]
        for system in SYSTEM_SLUGS:
            if system not in slugs:
                raise ValueError(f"object_types must include {system!r}")
        names = slugs + [t.singular_slug for t in self.object_types if t.singular_slug]
        if len(names) != len(set(names)):
            raise ValueError("object type slugs and singular slugs must be unique")
        ids = set(range(1, len(self.object_types) + 1))
        by_slug = {t.slug: t for t in self.object_types}
        for t in self.object_types:
            for f in t.fields:
                if f.related_object_type_id is not None and f.related_object_type_id not in ids:
                    raise ValueError(
                        f"{t.slug}.{f.field_name}: related_object_type_id "
                        f"{f.related_object_type_id} is not an object type id"
                    )
        for v in self.views:
            if v.object_type not in by_slug:
                raise ValueError(f"view {v.name!r}: unknown object_type {v.object_type!r}")
            known = {f.field_name for f in by_slug[v.object_type].fields} | RESERVED_NAMES
            used = v.columns + [f.field for f in v.filters] + [s.field for s in v.sort]
            for name in used:
                if name not in known:
                    raise ValueError(f"view {v.name!r}: unknown field {name!r}")
        return self

    def type_ids(self) -> dict[str, int]:
        """Slug → id: contacts 1, companies 2, then custom types from 3 in file order."""
        ids = {"contacts": 1, "companies": 2}
        next_id = 3
        for t in self.object_types:
            if t.slug not in ids:
                ids[t.slug] = next_id
                next_id += 1
        return ids


def default_seed_path() -> Path:
    """The packaged default seed (identical to the repository's sample_data/seed.yaml)."""
    return Path(str(resources.files("recordsync.sandbox").joinpath("seed.yaml")))


def _line_of(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (the deepest one that exists)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if getattr(k, "value", None) == part]
            if not match:
                break
            key_node, node = match[0]
            line = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def load_seed(path: str | Path | None = None) -> Seed:
    """Parse and check a seed file (None: the packaged default)."""
    file = Path(path) if path is not None else default_seed_path()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read seed file: {exc.strerror}",
            file=str(file),
            hint="pass --seed with an existing YAML file, or leave it out for the default seed",
        ) from exc
    data, root = parse_yaml(text, str(file))
    if not isinstance(data, dict):
        raise ConfigError("a seed file must be a YAML mapping", file=str(file))
    try:
        return Seed.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc) or None
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise ConfigError(
            message,
            file=str(file),
            line=_line_of(root, loc),
            key=key,
            hint="see docs/sandbox.md for the seed file format",
        ) from exc

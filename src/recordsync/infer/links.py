"""Keys and references for ``recordsync init``: the export's own key and the columns that
point at another object type's records.

- **Own key** (``ledger_key``): the first id column (``customerID``, ``order_id``, ``id``)
  whose sampled values are all there and all different, unless its words name a type this
  one refers to (``Company ID`` in a contacts export is its company's key).
- **References** (a relationship field, e.g. ``company_id`` → companies): a column naming
  the referenced record (``Company``, ``Related Company``, ``Account Name``: by name), its
  site (``Company Domain``: by domain) or its key (``CustomerID``, ``Account Id`` in a deals
  export, when it is not the export's own key: by the referenced step's ledger key). A
  reference is filled from another step of the same pipeline, so a one-file mapping proposes
  it (commented) and names it as left out.
"""

from __future__ import annotations

from typing import Any

from recordsync.core.suggest import normalize
from recordsync.infer.choice import Choice
from recordsync.infer.names import (
    COMPANY_DOMAINS,
    COMPANY_NAMES,
    CUSTOMER_KEYS,
    KEY_ENTITIES,
    is_one_of,
    key_of,
    reference_words,
)
from recordsync.infer.values import Shape
from recordsync.validate.schema import ObjectType, Schema


def entities(otype: ObjectType) -> set[str]:
    """The words an id column uses for records of ``otype`` (``company``, ``account``, ...)."""
    names = {otype.slug, otype.singular or otype.slug.rstrip("s"), otype.display_name}
    out = {normalize(n) for n in names if n}
    out |= {n.rstrip("s") for n in out}
    return out | set(KEY_ENTITIES.get(otype.slug, ()))


def related_types(otype: ObjectType, schema: Schema | None) -> dict[str, ObjectType]:
    """Relationship field → the object type it points at (other types only)."""
    if schema is None:
        return {}
    by_id = {t.id: t for t in schema.types.values() if t.id is not None}
    out: dict[str, ObjectType] = {}
    for f in otype.fields.values():
        rel = f.related_object_type_id
        target = by_id.get(rel) if rel is not None and f.type == "relationship" else None
        if target is not None and target.slug != otype.slug:
            out[f.name] = target
    return out


def own_key(
    header: list[str],
    samples: dict[str, list[str]],
    used: set[str],
    referred: set[str],
) -> tuple[str, str] | None:
    """(column, evidence) of the export's own key; ``referred``: entity words of the types
    this one refers to."""
    for col in header:
        who = key_of(col)
        if col in used or who is None or who in referred:
            continue
        cells = [c.strip() for c in samples.get(col, [])]
        if len(cells) < 2 or any(not c for c in cells) or len(set(cells)) != len(cells):
            continue
        return col, (
            f"header {col!r} is an id and its {len(cells)} sampled values are all different:"
            " the export's own key (a re-import updates the same records)"
        )
    return None


def references(
    header: list[str],
    shapes: dict[str, Shape],
    related: dict[str, ObjectType],
    used: set[str],
) -> list[Choice]:
    """The reference columns, one per relationship field (name first, then domain, then key)."""
    out: list[Choice] = []
    for fname, target in related.items():
        found = _reference(header, shapes, fname, target, used)
        if found is not None:
            used.add(found.column)
            out.append(found)
    return out


def _reference(
    header: list[str],
    shapes: dict[str, Shape],
    fname: str,
    target: ObjectType,
    used: set[str],
) -> Choice | None:
    singular = normalize(target.singular or target.slug.rstrip("s"))
    names = {singular, f"{singular} name", normalize(target.display_name)}
    names |= {f"{normalize(target.display_name)} name"}
    if target.slug == "companies":
        names |= {normalize(n) for n in COMPANY_NAMES}
    domains = {f"{singular} domain", f"{singular} website"}
    if target.slug == "companies":
        domains |= {normalize(n) for n in COMPANY_DOMAINS}
    keys = entities(target) | set(CUSTOMER_KEYS.get(target.slug, ()))
    for col in header:
        if col in used:
            continue
        kind = shapes[col].kind if col in shapes else "text"
        words = reference_words(col)
        if kind in ("text", "empty") and is_one_of(words, tuple(names), close=False):
            return _choice(fname, col, target, "name", f"header {col!r} names a {singular}")
        if kind in ("url", "domain") and is_one_of(words, tuple(domains), close=False):
            return _choice(fname, col, target, "domain", f"header {col!r} is a {singular}'s site")
    for col in header:
        who = key_of(col)
        if col not in used and who is not None and who in keys:
            return _choice(fname, col, target, None, f"header {col!r} is a {singular}'s key")
    return None


def _choice(fname: str, col: str, target: ObjectType, by: str | None, why: str) -> Choice:
    ref: dict[str, Any] = {"step": target.slug}
    if by is not None:
        ref["by"] = by
    how = f"by {by}" if by else f"by the key of the {target.slug} step (its ledger_key)"
    return Choice(fname, col, {"ref": ref}, f"{why}: a reference to {target.slug} {how}", "medium")

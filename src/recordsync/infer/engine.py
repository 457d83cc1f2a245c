"""Column → field inference for ``recordsync init``: names first, values as the referee.

A column is mapped to a field only when its sample values fit the field's type (the
service's rules, :mod:`.fit`): a header that *names* a field whose type the values do not
fit is left unmapped, with the reason. Values alone map a column only to a field whose type
is distinctive (e-mail, phone, URL, a select whose options the values are) and unique on the
object type. Each column and each field is used once, best score first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recordsync.infer.fit import fit, value_only
from recordsync.infer.names import (
    FIRST_NAMES,
    LAST_NAMES,
    NAME_BY_TYPE,
    NAME_NAMES,
    OWNER_NAMES,
    is_one_of,
    name_score,
)
from recordsync.infer.values import Shape, sniff
from recordsync.validate.schema import FieldDef, ObjectType

SKIPPED_FIELDS = frozenset({"owned_by_user_id"})  # the owner is found from users, below


@dataclass(frozen=True, slots=True)
class Choice:
    """One mapped line: ``field`` ← ``column`` with ``options``, and why."""

    field: str
    column: str
    options: dict[str, Any]
    evidence: str
    confidence: str  # high | medium | low


@dataclass(slots=True)
class Proposal:
    """Everything ``init`` writes: the mapping's parts with their evidence."""

    object_type: str
    name: dict[str, str] | None = None
    name_evidence: str = ""
    fields: list[Choice] = field(default_factory=list)
    match_by: list[str] = field(default_factory=list)
    match_note: str = ""
    owner: Choice | None = None
    unmapped: list[tuple[str, str]] = field(default_factory=list)
    missing_required: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, str]:
        """field → column, for scoring (``name`` and ``owner`` included)."""
        out = {c.field: c.column for c in self.fields}
        if self.name is not None:
            out["name"] = self.name.get("column") or self.name.get("template", "")
        if self.owner is not None:
            out["owner"] = self.owner.column
        return out


def infer(
    header: list[str],
    samples: dict[str, list[str]],
    otype: ObjectType,
    users: list[dict[str, Any]],
    shapes: dict[str, Shape] | None = None,
    displays: dict[str, str] | None = None,
) -> Proposal:
    """The proposal for a source with ``header`` and sample ``samples`` (column → cells).
    ``shapes``: known shapes (typed Parquet columns); ``displays``: field → display name."""
    shapes = dict(shapes or {})
    for col in header:
        shapes.setdefault(col, sniff(samples.get(col, [])))
    prop = Proposal(otype.slug)
    used: set[str] = set()
    _name(prop, header, otype, used)
    _owner(prop, header, samples, users, used, otype, displays or {})
    singular = otype.singular or otype.slug.rstrip("s")
    cands: list[tuple[float, int, str, FieldDef, dict[str, Any], str]] = []
    rejected: dict[str, str] = {}
    for i, col in enumerate(header):
        if col in used:
            continue
        values = [v.strip() for v in samples.get(col, []) if v and v.strip()]
        for fdef in otype.fields.values():
            if fdef.name in SKIPPED_FIELDS:
                continue
            display = (displays or {}).get(fdef.name, fdef.name)
            ns, why = name_score(col, fdef.name, display, singular)
            ok, opts, ev = fit(fdef, values, shapes[col])
            if ns and not ok:
                why = f"named like '{fdef.name}' but its values do not fit a {fdef.type} field"
                empty = shapes[col].kind == "empty"
                rejected.setdefault(col, "its sampled cells are all blank" if empty else why)
            elif ns and ok:
                cands.append((ns + 0.05, i, col, fdef, opts, f"{why}; {ev}"))
            elif ok and value_only(fdef, shapes[col], values, otype):
                cands.append((0.4, i, col, fdef, opts, f"by its values: {ev}"))
    taken: set[str] = set()
    for score, _i, col, fdef, opts, ev in sorted(cands, key=lambda c: (-c[0], c[1])):
        if col in used or fdef.name in taken:
            continue
        used.add(col)
        taken.add(fdef.name)
        conf = "high" if score >= 0.9 else "medium" if score >= 0.6 else "low"
        prop.fields.append(Choice(fdef.name, col, opts, ev, conf))
        _warn_dates(prop, col, shapes[col])
    prop.fields.sort(key=lambda c: header.index(c.column))
    for col in header:
        if col not in used:
            prop.unmapped.append((col, rejected.get(col, "no field matches its name")))
    _match_by(prop, otype)
    prop.missing_required = [
        f.name
        for f in otype.fields.values()
        if f.required and f.default_value is None and f.name not in taken
    ]
    if prop.name is None:
        prop.missing_required.insert(0, "name")
    return prop


def _name(prop: Proposal, header: list[str], otype: ObjectType, used: set[str]) -> None:
    singular = otype.singular or otype.slug.rstrip("s")
    names = NAME_NAMES + NAME_BY_TYPE.get(otype.slug, ()) + (f"{singular} name",)
    names += (f"{otype.display_name} name",)
    full = next((c for c in header if is_one_of(c, names)), None)
    if full is not None:
        prop.name = {"column": full}
        prop.name_evidence = f"header {full!r} is a name column (high)"
        used.add(full)
        return
    first = next((c for c in header if is_one_of(c, FIRST_NAMES)), None)
    last = next((c for c in header if is_one_of(c, LAST_NAMES)), None)
    if first and last:
        prop.name = {"template": f"{{{first}}} {{{last}}}"}
        prop.name_evidence = f"first and last name columns {first!r}, {last!r} (high)"
        used.update((first, last))


def _owner(
    prop: Proposal,
    header: list[str],
    samples: dict[str, list[str]],
    users: list[dict[str, Any]],
    used: set[str],
    otype: ObjectType,
    displays: dict[str, str],
) -> None:
    """The owner column: mostly users' e-mails or full names; a header that names a field
    (``Email`` of a contacts export of colleagues) stays that field's unless it says owner."""
    singular = otype.singular or otype.slug.rstrip("s")
    emails = {str(u.get("email") or "").casefold() for u in users} - {""}
    names = {str(u.get("full_name") or u.get("name") or "").casefold() for u in users} - {""}
    best: tuple[float, int, str, str] | None = None
    for i, col in enumerate(header):
        if col in used:
            continue
        distinct = {v.strip().casefold() for v in samples.get(col, []) if v and v.strip()}
        if not distinct:
            continue
        by_email = len(distinct & emails) / len(distinct)
        by_name = len(distinct & names) / len(distinct)
        share, how = max((by_email, "e-mails"), (by_name, "full names"))
        named = is_one_of(col, OWNER_NAMES)
        field_named = any(
            name_score(col, f, displays.get(f, f), singular)[0] >= 0.9
            for f in otype.fields
            if f not in SKIPPED_FIELDS
        )
        if field_named and not named:
            continue
        if share >= 0.5 or (named and share > 0):
            score = share + (0.5 if named else 0)
            if best is None or score > best[0]:
                ev = f"{share:.0%} of its distinct values are users' {how}"
                best = (score, i, col, ev + (f"; header {col!r} names an owner" if named else ""))
    if best is not None:
        conf = "high" if best[0] >= 1.0 else "medium"
        prop.owner = Choice("owner", best[2], {"on_unknown": "fail"}, best[3], conf)
        used.add(best[2])


def _match_by(prop: Proposal, otype: ObjectType) -> None:
    mapped = {c.field for c in prop.fields}
    if otype.slug == "contacts" and "email" in mapped:
        prop.match_by = ["email"]
        prop.match_note = "contacts are deduplicated by e-mail; a row without one is created"
    elif otype.slug == "companies" and "domain" in mapped:
        prop.match_note = (
            "no match_by: the service deduplicates companies by domain (and LinkedIn URL,"
            " similar name) when it creates"
        )
    elif prop.name is not None:
        prop.match_by = ["name"]
        prop.match_note = f"{otype.slug} have no dedup key here: a record is found by its name"


def _warn_dates(prop: Proposal, col: str, shape: Shape) -> None:
    if shape.kind in ("date", "datetime") and shape.ambiguous_with:
        prop.warnings.append(
            f"column {col!r}: every sampled value reads both as {shape.date_format} and as"
            f" {shape.ambiguous_with} (day and month are ambiguous); {shape.date_format} was"
            " chosen: check it against a date you know"
        )

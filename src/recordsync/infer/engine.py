"""Column → field inference for ``recordsync init``: names first, values as the referee.

A column is mapped to a field only when its sample values fit the field's type (the
service's rules, :mod:`.fit`): a header that *names* a field whose type the values do not
fit is left unmapped, with the reason. Values alone map a column only to a field whose type
is distinctive (e-mail, phone, URL, a select whose options the values are) and unique on the
object type. Each column and each field is used once, best score first. A column whose
sampled cells are all blank maps only to a field its header names outright (low confidence,
with a warning). Cells such as ``NULL`` or ``N/A`` (:data:`.values.NULL_TOKENS`) are read as
blank and declared once for the source (``null_values``). The export's own key and the
columns that refer to other records come from :mod:`.links`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from recordsync.infer.choice import Choice
from recordsync.infer.fit import fit, value_only
from recordsync.infer.links import entities, own_key, references, related_types
from recordsync.infer.names import (
    FIRST_NAMES,
    LAST_NAMES,
    NAME_BY_TYPE,
    NAME_NAMES,
    OWNER_NAMES,
    is_one_of,
    name_score,
)
from recordsync.infer.proposal import Proposal
from recordsync.infer.values import Shape, null_tokens, sniff, without_nulls
from recordsync.validate.schema import FieldDef, ObjectType, Schema

__all__ = ["Choice", "Proposal", "infer"]

SKIPPED_FIELDS = frozenset({"owned_by_user_id"})  # the owner is found from users, below


def infer(
    header: list[str],
    samples: dict[str, list[str]],
    otype: ObjectType,
    users: list[dict[str, Any]],
    shapes: dict[str, Shape] | None = None,
    displays: dict[str, str] | None = None,
    schema: Schema | None = None,
) -> Proposal:
    """The proposal for a source with ``header`` and sample ``samples`` (column → cells).
    ``shapes``: known shapes (typed Parquet columns); ``displays``: field → display name;
    ``schema``: the whole schema (the object types a relationship field points at)."""
    prop = Proposal(otype.slug)
    prop.null_values = null_tokens(samples)
    samples = {c: without_nulls(v, prop.null_values) for c, v in samples.items()}
    shapes = dict(shapes or {})
    for col in header:
        shapes.setdefault(col, sniff(samples.get(col, [])))
    used: set[str] = set()
    related = related_types(otype, schema)
    referred = set().union(*(entities(t) for t in related.values())) - entities(otype)
    if (key := own_key(header, samples, used, referred)) is not None:
        prop.ledger_key, prop.ledger_evidence = key
        used.add(key[0])
    prop.refs = references(header, shapes, related, used)
    _name(prop, header, otype, used)
    _owner(prop, header, samples, users, used, otype, displays or {})
    _fields(prop, header, samples, shapes, otype, displays or {}, used, set(related))
    _match_by(prop, otype)
    taken = {c.field for c in prop.fields} | {c.field for c in prop.refs}
    prop.missing_required = [
        f.name
        for f in otype.fields.values()
        if f.required and f.default_value is None and f.name not in taken
    ]
    if prop.name is None:
        prop.missing_required.insert(0, "name")
    return prop


def _fields(
    prop: Proposal,
    header: list[str],
    samples: dict[str, list[str]],
    shapes: dict[str, Shape],
    otype: ObjectType,
    displays: dict[str, str],
    used: set[str],
    ref_fields: set[str],
) -> None:
    singular = otype.singular or otype.slug.rstrip("s")
    cands: list[tuple[float, int, str, FieldDef, dict[str, Any], str]] = []
    rejected: dict[str, str] = {}
    for i, col in enumerate(header):
        if col in used:
            continue
        values = [v.strip() for v in samples.get(col, []) if v and v.strip()]
        blank = shapes[col].kind == "empty"
        for fdef in otype.fields.values():
            if fdef.name in SKIPPED_FIELDS or fdef.name in ref_fields:
                continue
            display = displays.get(fdef.name, fdef.name)
            ns, why = name_score(col, fdef.name, display, singular)
            ok, opts, ev = fit(fdef, values, shapes[col], named=ns >= 0.9)
            if ns >= 0.9 and blank:
                ev = "its sampled cells are all blank: mapped by its name alone"
                cands.append((ns - 0.6, i, col, fdef, {}, f"{why}; {ev}"))
            elif ns and not ok:
                what = "sites, domains or e-mails" if fdef.name == "domain" else None
                why = f"named like '{fdef.name}' but its values " + (
                    f"are not {what}" if what else f"do not fit a {fdef.type} field"
                )
                rejected.setdefault(col, "its sampled cells are all blank" if blank else why)
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
        if shapes[col].kind == "empty":
            prop.warnings.append(
                f"column {col!r} → {fdef.name}: its sampled cells are all blank, so its"
                " values could not be checked; a run reports any that do not fit"
            )
    prop.fields.sort(key=lambda c: header.index(c.column))
    for ref in prop.refs:
        by = ref.options["ref"].get("by")
        how = f"its values are {by}s" if by else "its values are keys"
        step = ref.options["ref"]["step"]
        prop.unmapped.append(
            (
                ref.column,
                f"a reference to {step} ({ref.field}; {how}): it is filled from a {step}"
                f" step earlier in the same pipeline (written, commented, in the mapping)",
            )
        )
    for col in header:
        if col not in used:
            prop.unmapped.append((col, rejected.get(col, "no field matches its name")))
    prop.unmapped.sort(key=lambda u: header.index(u[0]))


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
        _warn_shared_owners(prop, best[2], samples.get(best[2], []), users)


def _warn_shared_owners(
    prop: Proposal, col: str, cells: list[str], users: list[dict[str, Any]]
) -> None:
    """A sampled owner value that fits several users (a shared full name or e-mail): each
    such row fails until the owners file pins one; say so now, with the candidates."""
    fits: dict[str, list[str]] = {}
    for u in users:
        who = str(u.get("email") or u.get("id") or "?")
        for key in (u.get("email"), u.get("full_name") or u.get("name")):
            if key:
                fits.setdefault(str(key).strip().casefold(), []).append(who)
    counts = Counter(c.strip().casefold() for c in cells if c and c.strip())
    spelled: dict[str, str] = {}  # as first written
    for c in cells:
        if c and c.strip():
            spelled.setdefault(c.strip().casefold(), c.strip())
    for value, n in sorted(counts.items()):
        candidates = sorted(set(fits.get(value, [])))
        if len(candidates) > 1:
            prop.warnings.append(
                f"owner column {col!r}: {spelled[value]!r} ({n} sampled row"
                f"{'s' if n != 1 else ''}) fits {len(candidates)} users: "
                + ", ".join(candidates)
                + "; those rows fail until an owners file (owner.owners_file) says which"
            )


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

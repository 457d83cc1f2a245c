"""Whether a column's values fit a field's type, and the options that reading them takes.

The rules are the service's (docs/mapping.md, "How values are checked"), applied to the
sample's cells through :mod:`.values`; a column is never mapped to a field they do not fit.
"""

from __future__ import annotations

from typing import Any

from recordsync.core.suggest import confident
from recordsync.infer.values import ISO_DATETIME, Shape, is_phone_column, split_char
from recordsync.validate.schema import FieldDef, ObjectType


def fit(
    fdef: FieldDef, values: list[str], shape: Shape, named: bool = False
) -> tuple[bool, dict[str, Any], str]:
    """Whether ``values`` fit the field's type: (fits, mapping options, evidence).
    ``named``: the header names the field (a date-time then fits a date field, its time of
    day dropped)."""
    t, opts = fdef.type, {}
    if shape.kind == "empty":
        return False, {}, "the sample has no values"
    if t in ("text", "long_text"):
        if fdef.name == "domain":  # a domain is a site's host: nothing else belongs there
            ok = shape.kind in ("url", "domain", "email")
            return ok, {"transform": "domain"}, "values are sites or e-mails (→ their domain)"
        return not fdef.allow_multiple, {}, "text"
    if t == "email":
        return shape.kind == "email", {}, "values are e-mail addresses"
    if t == "phone":
        return is_phone_column(values), {}, "values are phone numbers"
    if t == "url":
        linkedin = sum("linkedin." in v.lower() for v in values) >= len(values) / 2
        ok = shape.kind == "url" and linkedin == ("linkedin" in fdef.name)
        return ok, {}, "values are http(s) URLs"
    if t in ("date", "datetime"):
        return _fit_time(t, shape, named)
    if t in ("number", "currency", "percentage"):
        if shape.kind not in ("number", "integer"):
            return False, {}, ""
        if shape.decimal_separator != ".":
            opts["decimal_separator"] = shape.decimal_separator
        if shape.thousands_separator:
            opts["thousands_separator"] = shape.thousands_separator
        return True, opts, "values are numbers"
    if t == "boolean":
        zero_one = shape.kind == "integer" and all(v.strip() in ("0", "1") for v in values)
        return shape.kind == "boolean" or zero_one, {}, "values are yes/no"
    if t == "select":
        return _fit_select(fdef, values)
    if t == "relationship":
        return shape.kind == "integer", {}, "values are record ids"
    return False, {}, ""


def _fit_time(t: str, shape: Shape, named: bool) -> tuple[bool, dict[str, Any], str]:
    if shape.kind == "date":
        fmt = shape.date_format or "%Y-%m-%d"
        if t == "date":
            opts = {} if fmt == "%Y-%m-%d" else {"date_format": fmt}
        else:
            opts = {"datetime_format": fmt}
        return True, opts, f"values are dates ({fmt})"
    if shape.kind == "datetime" and t == "datetime":
        fmt = shape.date_format or ""
        opts = {} if not fmt or fmt in ISO_DATETIME else {"datetime_format": fmt}
        return True, opts, f"values are date-times ({fmt or 'typed'})"
    if shape.kind == "datetime" and t == "date" and shape.date_format and (
        shape.midnight or named
    ):
        fmt = shape.date_format
        how = "all at midnight" if shape.midnight else "the time of day is dropped"
        return True, {"date_format": fmt}, f"values are date-times ({fmt}; {how})"
    return False, {}, ""


def _select_share(fdef: FieldDef, values: list[str]) -> tuple[list[str], set[str], float]:
    """(items, distinct casefolded items, share of the distinct ones that are options)."""
    known = {o.value.casefold() for o in fdef.options} | {o.label.casefold() for o in fdef.options}
    sep = split_char(values) if fdef.allow_multiple else None
    items = [i.strip() for v in values for i in (v.split(sep) if sep else [v]) if i.strip()]
    distinct = {i.casefold() for i in items}
    return items, distinct, len(distinct & known) / len(distinct) if distinct else 0.0


def _fit_select(fdef: FieldDef, values: list[str]) -> tuple[bool, dict[str, Any], str]:
    items, distinct, share = _select_share(fdef, values)
    if not distinct:
        return False, {}, ""
    sep = split_char(values) if fdef.allow_multiple else None
    opts: dict[str, Any] = {"split": sep} if sep and sep != "," else {}
    if share >= 0.5:  # other spellings of an option, by the report's own rules
        spellings = {o.value: o.value for o in fdef.options}
        spellings.update({o.label: o.value for o in fdef.options})
        known = {k.casefold() for k in spellings}
        first = {i.casefold(): i for i in reversed(items)}
        fixes = {first[v]: confident(first[v], spellings) for v in sorted(distinct - known)}
        if found := {k: v for k, v in fixes.items() if v is not None}:
            opts["value_map"] = found
    return share >= 0.5, opts, f"{share:.0%} of the distinct values are options"


def value_only(fdef: FieldDef, shape: Shape, values: list[str], otype: ObjectType) -> bool:
    """Values alone may decide only for a type that is distinctive and unique here: the one
    e-mail, URL or phone field, or a select whose options nearly all values are."""
    if fdef.type in ("email", "url", "phone"):
        same = [f for f in otype.fields.values() if f.type == fdef.type]
        return len(same) == 1 and shape.kind == fdef.type
    if fdef.type == "select":
        _items, distinct, share = _select_share(fdef, values)
        return len(distinct) >= 2 and share >= 0.8
    return False

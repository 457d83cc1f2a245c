"""Do values fit their field type? Columnar checks per pyarrow array, one per field type.

Input: a string array (nulls are blanks: not checked). Output: :class:`Checked`, the JSON
values to send and, per row, the reason a value is invalid (None when fine).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import FieldSpec
from recordsync.core.suggest import confident
from recordsync.validate.checked import Checked, bad_mask, bad_where, reasons_at
from recordsync.validate.dates import check_date, check_datetime
from recordsync.validate.distinct import Memo, Outcome, map_distinct, pylist, repetitive, spread
from recordsync.validate.formats import check_email, check_phone, check_url
from recordsync.validate.schema import FieldDef

NUMBER_RE = r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$"
INT_RE = r"^\d+$"
TRUE = frozenset({"true", "yes", "y", "1", "t", "on"})
FALSE = frozenset({"false", "no", "n", "0", "f", "off"})
NUMERIC_TYPES = frozenset({"number", "currency", "percentage"})
INT64_MAX = str(2**63 - 1)
SAFE_INT = 2.0**53
"""Whole numbers below this (in magnitude) are sent as JSON integers."""
BY_DISTINCT = frozenset({"email", "phone", "datetime", "relationship", "user", *NUMERIC_TYPES})
"""Types checked column-wise (the others go by distinct value already): a column that
repeats its values has each checked once, the outcomes spread to its rows."""


def check_text(arr: pa.Array) -> Checked:
    return Checked(pylist(arr))


def number_pattern(decimal: str, thousands: str | None) -> str:
    """The one grammar of a number cell (RE2), after currency signs are trimmed: a sign,
    digits, the ``decimal`` separator and more digits, an exponent. ``thousands`` may appear
    only between groups: a first group of 1-3 digits, then groups of exactly three
    (``1,234,567.89``), never in the fraction or the exponent."""
    dec = _literal(decimal)
    whole = r"\d+"
    if thousands:
        whole = rf"(?:\d{{1,3}}(?:{_literal(thousands)}\d{{3}})+|\d+)"
    return rf"^[+-]?(?:{whole}(?:{dec}\d*)?|{dec}\d+)(?:[eE][+-]?\d+)?$"


def _literal(text: str) -> str:
    """``text`` as RE2 matches it literally (every character as a ``\\x{..}`` escape)."""
    return "".join(f"\\x{{{ord(c):x}}}" for c in text)


SPACES = ("\u00a0", "\u202f")
"""What a space as ``thousands_separator`` also stands for: a no-break space and a narrow
one (the grouping spaces of French and other locales)."""


def number_reason(spec: FieldSpec) -> str:
    """Why a cell is not a number, with the separators and an example in their spelling."""
    dec, thou = spec.decimal_separator, spec.thousands_separator
    if not thou:
        return f"is not a number (decimal separator '{dec}')"
    example = f"1{thou}234{thou}567{dec}89"
    return (
        f"is not a number (decimal separator '{dec}', thousands separator '{thou}' only "
        f"between groups of three digits: {example})"
    )


def check_number(arr: pa.Array, fdef: FieldDef | None, spec: FieldSpec) -> Checked:
    dec, thou = spec.decimal_separator, spec.thousands_separator
    s = arr
    if thou == " ":
        for space in SPACES:
            s = pc.replace_substring(s, space, " ")
    s = pc.utf8_trim(s, characters="$€£¥% ")
    ok = pc.match_substring_regex(s, number_pattern(dec, thou))
    if thou:
        s = pc.replace_substring(s, thou, "")
    if dec != ".":
        s = pc.replace_substring(s, dec, ".")
    bad0 = bad_mask(arr, ok)
    reasons = reasons_at(bad0, number_reason(spec))
    vals = pc.cast(pc.if_else(ok, s, None), pa.float64()).to_numpy(zero_copy_only=False)
    places = fdef.decimal_places if fdef else None
    bad = bad0 if reasons is not None else None
    checks: list[tuple[npt.NDArray[np.bool_], str]] = [
        (np.isinf(vals), "is out of range (too large to be a number the service takes)")
    ]
    if fdef is not None:
        with np.errstate(invalid="ignore"):
            if fdef.number_min is not None:
                checks.append((vals < fdef.number_min, f"must be >= {_fmt(fdef.number_min)}"))
            if fdef.number_max is not None:
                checks.append((vals > fdef.number_max, f"must be <= {_fmt(fdef.number_max)}"))
            if places is not None:
                reason = f"must have at most {places} decimal places"
                checks.append((too_many_places(vals, places), reason))
    for mask, reason in checks:
        if mask.any():
            if bad is None:
                bad = np.zeros(len(vals), dtype=bool)
            if reasons is None:
                reasons = [None] * len(vals)
            new = mask & ~bad
            for i in np.flatnonzero(new).tolist():
                reasons[i] = reason
            bad |= new
    valid = ~np.isnan(vals)
    if bad is not None:
        valid &= ~bad
    obj = np.full(len(vals), None, dtype=object)
    obj[valid] = vals[valid]
    if places == 0:  # whole numbers go as JSON integers, as far as a float holds them exactly
        whole = valid & (np.abs(vals) < SAFE_INT)
        obj[whole] = vals[whole].astype(np.int64)
    return Checked(obj.tolist(), reasons if bad is not None else None)


def decimals(x: float) -> int:
    """Decimal places of ``x`` as JSON writes it (its shortest repr): 0.1 has 1, 1e-07 has 7,
    1e+20 and 7.0 have 0."""
    exponent = Decimal(repr(float(x))).normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def too_many_places(vals: npt.NDArray[np.float64], places: int) -> npt.NDArray[np.bool_]:
    """Values whose JSON form has more than ``places`` decimals. Columnar where
    ``round(v, places) == v`` decides it exactly (``v * 10**places`` well inside the 53-bit
    mantissa, ``10**places`` exact); the others one by one through :func:`decimals`."""
    finite = np.isfinite(vals)
    with np.errstate(all="ignore"):
        exact = finite & (np.abs(vals) * 10.0**places < 2.0**50) & (places <= 15)
        out: npt.NDArray[np.bool_] = exact & (np.round(vals, places) != vals)
    for i in np.flatnonzero(finite & ~exact).tolist():
        out[i] = decimals(vals[i]) > places
    return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _boolean(v: str) -> Outcome:
    low = v.strip().lower()
    if low in TRUE:
        return True, None, None
    if low in FALSE:
        return False, None, None
    return None, "is not a boolean (yes/no, true/false, y/n, 1/0)", None


def check_boolean(arr: pa.Array, memo: Memo | None = None) -> Checked:
    return Checked(*map_distinct(arr, _boolean, memo))


def check_select(arr: pa.Array, fdef: FieldDef, memo: Memo | None = None) -> Checked:
    by_value = {o.value: o.value for o in fdef.options}
    folded = {o.value.casefold(): o.value for o in fdef.options}
    folded.update({o.label.casefold(): o.value for o in fdef.options})
    spellings = {o.value: o.value for o in fdef.options}
    spellings.update({o.label: o.value for o in fdef.options})
    listing = ", ".join(o.value for o in fdef.options[:8]) + (
        ", ..." if len(fdef.options) > 8 else ""
    )

    def one(v: str) -> Outcome:
        if v in by_value:
            return v, None, None
        hit = folded.get(v.strip().casefold())
        if hit is not None:
            return hit, None, None
        close = confident(v, spellings)
        hint = {"value_map": {v: close}} if close is not None else None
        return None, f"is not an option ({listing})", hint

    return Checked(*map_distinct(arr, one, memo))


def check_relationship(arr: pa.Array) -> Checked:
    digits = pc.utf8_ltrim(arr, characters="0")
    size = pc.utf8_length(digits)  # a 64-bit integer: at most 9223372036854775807
    fits = pc.or_(pc.less(size, 19), pc.and_(pc.equal(size, 19), pc.less_equal(digits, INT64_MAX)))
    ok = pc.and_(pc.match_substring_regex(arr, INT_RE), fits)
    vals = pc.cast(pc.if_else(ok, arr, None), pa.int64())
    return Checked(vals.to_pylist(), bad_where(arr, ok, "is not a record id (an integer)"))


def check_user(arr: pa.Array, user_ids: frozenset[str] | None) -> Checked:
    if user_ids is None:
        return Checked(pylist(arr))
    ok = pc.is_in(arr, value_set=pa.array(sorted(user_ids), pa.string()))
    return Checked(pylist(arr), bad_where(arr, ok, "is not a user id of this organization"))


def check_array(
    arr: pa.Array,
    ftype: str,
    fdef: FieldDef | None,
    spec: FieldSpec,
    user_ids: frozenset[str] | None,
    memo: Memo | None = None,
) -> Checked:
    """Check a string array against a field type (``ftype`` when there is no schema).

    ``memo``: outcomes per distinct value kept across batches of one column (same ftype,
    fdef and spec each time). A column that repeats its values (:func:`repetitive`) has
    each distinct value checked once (every check is one of the value alone)."""
    if ftype in BY_DISTINCT and repetitive(arr):
        enc = pc.dictionary_encode(arr)
        chk = _check_array(enc.dictionary, ftype, fdef, spec, user_ids, memo)
        reasons, hints = chk.reasons, chk.hints
        return Checked(
            spread(chk.values, enc.indices),
            spread(reasons, enc.indices) if reasons is not None else None,
            spread(hints, enc.indices) if hints is not None else None,
        )
    return _check_array(arr, ftype, fdef, spec, user_ids, memo)


def _check_array(
    arr: pa.Array,
    ftype: str,
    fdef: FieldDef | None,
    spec: FieldSpec,
    user_ids: frozenset[str] | None,
    memo: Memo | None,
) -> Checked:
    if ftype == "email":
        return check_email(arr)
    if ftype == "phone":
        return check_phone(arr)
    if ftype == "url":
        return check_url(arr, memo)
    if ftype in NUMERIC_TYPES:
        return check_number(arr, fdef, spec)
    if ftype == "boolean":
        return check_boolean(arr, memo)
    if ftype == "date":
        return check_date(arr, spec, memo)
    if ftype == "datetime":
        return check_datetime(arr, spec, memo)
    if ftype == "select" and fdef is not None and fdef.options:
        return check_select(arr, fdef, memo)
    if ftype == "relationship":
        return check_relationship(arr)
    if ftype == "user":
        return check_user(arr, user_ids)
    return check_text(arr)


def kind_of(spec: FieldSpec, fdef: FieldDef | None) -> str:
    """The field type to check against: the schema's, else what the options imply."""
    if fdef is not None:
        return fdef.type
    if spec.datetime_format:
        return "datetime"
    if spec.date_format:
        return "date"
    if spec.thousands_separator or spec.decimal_separator != ".":
        return "number"
    return "text"


__all__ = ["Checked", "check_array", "kind_of"]

"""What a column's values look like: e-mails, phones, URLs, dates, numbers, booleans.

Each sniffer looks at a sample of a column's non-blank cells (as text) and says whether
*nearly all* of them (:data:`SHARE`) have one shape, with the options a mapping needs to read
them (a date format, number separators). The rules are the service's own (docs/mapping.md,
"How values are checked"), so a column that passes a sniffer maps to a field of that type
without invalid rows for the sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

SHARE = 0.9
"""Share of a sample's cells that must have a shape for the column to count as that kind."""

EMAIL = re.compile(r"^[^@\s\"(),:;<>\[\\\]]+@[^@\s\"(),:;<>\[\\\]]+\.[^@\s\"(),:;<>\[\\\]]+$")
PHONE = re.compile(r"^\+?[\d\s().\-/]+(?:\s*(?:x|ext\.?\s?)\d{1,6})?$", re.IGNORECASE)
URL = re.compile(r"^https?://[^\s/]+\.[^\s]*$", re.IGNORECASE)
BARE_DOMAIN = re.compile(r"^(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/?$", re.IGNORECASE)
BOOLEANS = frozenset(["yes", "no", "y", "n", "true", "false", "t", "f", "1", "0", "on", "off"])
INTEGER = re.compile(r"^[+-]?\d+$")

DATE_FORMATS = (
    "%Y-%m-%d",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%Y/%m/%d",
    "%d/%m/%y",
    "%m/%d/%y",
    "%d %b %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%B %d, %Y",
)
DATETIME_FORMATS = (
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%S.%f%z",
    "%Y-%m-%d %H:%M",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %I:%M %p",
    "%d.%m.%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M:%S",
)
ISO_DATETIME = frozenset(DATETIME_FORMATS[:3])
"""Formats the service reads as they are (no ``datetime_format`` needed)."""
DAY_MONTH_TWINS = {"%d/%m/%Y": "%m/%d/%Y", "%d-%m-%Y": "%m-%d-%Y", "%d/%m/%y": "%m/%d/%y"}
DAY_MONTH_TWINS.update({v: k for k, v in DAY_MONTH_TWINS.items()})
DAY_MONTH_TWINS.update({"%d/%m/%Y %H:%M": "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M": "%d/%m/%Y %H:%M"})
DAY_MONTH_TWINS.update(
    {"%d/%m/%Y %H:%M:%S": "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S": "%d/%m/%Y %H:%M:%S"}
)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a column holds: ``kind`` and what reading it takes."""

    kind: str
    """email, phone, url, domain (a bare domain or URL-ish host), date, datetime, number,
    boolean, integer (whole numbers: also ids), text, empty."""
    date_format: str | None = None
    ambiguous_with: str | None = None
    """For dates: the day/month twin format that reads every sample value too."""
    decimal_separator: str = "."
    thousands_separator: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    midnight: bool = False
    """For date-times: every sampled value is at 00:00 (a date written as a date-time)."""


def _share(values: list[str], ok: Callable[[str], object]) -> float:
    hits = sum(1 for v in values if ok(v))
    return hits / len(values) if values else 0.0


def _parses(v: str, fmt: str) -> bool:
    try:
        datetime.strptime(v, fmt)
    except ValueError:
        return False
    return True


def _time_format(values: list[str], formats: tuple[str, ...]) -> tuple[str, str | None] | None:
    """The format that reads the most values (nearly all), and its day/month twin when that
    reads as many: then the values cannot tell day from month."""
    best: tuple[float, str] | None = None
    for fmt in formats:
        share = sum(_parses(v, fmt) for v in values) / len(values)
        if share >= SHARE and (best is None or share > best[0]):
            best = (share, fmt)
    if best is None:
        return None
    twin = DAY_MONTH_TWINS.get(best[1])
    both = twin is not None and sum(_parses(v, twin) for v in values) / len(values) >= best[0]
    return best[1], twin if both else None


def _numbers(values: list[str]) -> tuple[str, str | None] | None:
    """(decimal separator, thousands separator) that read nearly every value as a number."""
    stripped = [v.strip().strip("$€£¥").rstrip("%").strip() for v in values]
    for dec, thou in ((".", None), (".", ","), (",", None), (",", "."), (".", " ")):
        pattern = _number_pattern(dec, thou)
        if _share(stripped, pattern.match) >= SHARE:
            return dec, thou
    return None


def _number_pattern(dec: str, thou: str | None) -> re.Pattern[str]:
    d = re.escape(dec)
    whole = r"\d+" if thou is None else rf"\d{{1,3}}(?:{re.escape(thou)}\d{{3}})*"
    return re.compile(rf"^[+-]?(?:{whole}|\d+)(?:{d}\d+)?$")


def sniff(values: list[str]) -> Shape:
    """The shape of a column from its non-blank sample cells (trimmed)."""
    values = [v.strip() for v in values if v and v.strip()]
    if not values:
        return Shape("empty")
    if _share(values, EMAIL.match) >= SHARE:
        return Shape("email")
    if _share(values, URL.match) >= SHARE:
        return Shape("url")
    if _share(values, lambda v: v.lower() in BOOLEANS) >= SHARE and not all(
        v in ("0", "1") for v in values
    ):
        return Shape("boolean")
    if _share(values, INTEGER.match) >= SHARE:
        return Shape("integer")
    if _share(values, lambda v: URL.match(v) or BARE_DOMAIN.match(v)) >= SHARE:
        return Shape("domain")
    found = _time_format(values, DATE_FORMATS)
    if found is not None:
        return Shape("date", date_format=found[0], ambiguous_with=found[1])
    found = _time_format(values, DATETIME_FORMATS)
    if found is not None:
        midnight = all(_at_midnight(v, found[0]) for v in values)
        return Shape("datetime", date_format=found[0], ambiguous_with=found[1], midnight=midnight)
    seps = _numbers(values)
    if seps is not None:
        return Shape("number", decimal_separator=seps[0], thousands_separator=seps[1])
    if _share(values, _is_phone) >= SHARE:
        return Shape("phone")
    return Shape("text")


def _at_midnight(v: str, fmt: str) -> bool:
    try:
        t = datetime.strptime(v, fmt)
    except ValueError:
        return True  # one of the few values the format does not read: no evidence
    return (t.hour, t.minute, t.second, t.microsecond) == (0, 0, 0, 0)


NULL_TOKENS = ("NULL", "(null)", "N/A", "#N/A", "NaN", "nil", "-", "--")
"""Cells that stand for no value in exports (compared case-insensitively, trimmed)."""
_NULL_FOLDED = frozenset(t.casefold() for t in NULL_TOKENS)


def null_tokens(columns: dict[str, list[str]]) -> list[str]:
    """The spellings of :data:`NULL_TOKENS` that fill some cells of ``columns`` (a source's
    sample), most frequent first: cells to read as empty in the whole file."""
    seen: dict[str, int] = {}
    for cells in columns.values():
        for cell in cells:
            v = cell.strip() if cell else ""
            if v and v.casefold() in _NULL_FOLDED:
                seen[v] = seen.get(v, 0) + 1
    return sorted(seen, key=lambda t: (-seen[t], t))


def without_nulls(cells: list[str], tokens: list[str]) -> list[str]:
    """``cells`` with the ``tokens`` (whole cells, trimmed) made blank."""
    drop = set(tokens)
    return ["" if c and c.strip() in drop else c for c in cells]


def _is_phone(v: str) -> bool:
    if not PHONE.match(v):
        return False
    digits = sum(c.isdigit() for c in v)
    return 5 <= digits <= 20 and "+" not in v[1:]


def is_phone_column(values: list[str]) -> bool:
    """Nearly all cells are phone numbers by the service's rule (integers too: 5-20 digits)."""
    values = [v.strip() for v in values if v and v.strip()]
    return bool(values) and _share(values, _is_phone) >= SHARE


def split_char(values: list[str]) -> str | None:
    """The list separator of a multi-value column (``;``, ``|`` or ``,``) when cells use one."""
    for sep in (";", "|", ","):
        if any(sep in v for v in values):
            return sep
    return None

"""Merge prediction: which rows the service will fold into the record another row claims.

The service deduplicates on create (the contract, "Deduplication on create"): contacts by
e-mail; companies by normalised domain, then normalised LinkedIn URL, then similar name, the
first rule that matches winning. An entry creates when it has no ``match_by`` or its
``match_by`` (e-mail, name) finds nothing; an entry matched by id never does. Two rows of one
source that share such a key end on one record, the later one overwriting the earlier: the
pipeline predicts this and holds the later row (status ``merged``) unless the mapping
declares ``merges: expected``.

The normalisations are written here from the contract (not shared with the sandbox, whose
behaviour the tests compare them with over HTTP).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, Literal

Kind = Literal["contacts", "companies"]

LEGAL_SUFFIXES = frozenset(
    {"inc", "llc", "ltd", "gmbh", "corp", "corporation", "co", "sa", "ag", "bv", "plc"}
)
"""One trailing legal suffix is removed from a company name before names are compared
(after punctuation is removed: ``Inc.`` is ``inc``)."""

_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://")
_PATH = re.compile(r"[/?#]")
_QUERY = re.compile(r"[?#]")
_ASCII_PUNCTUATION = {
    c: None for c in range(128) if unicodedata.category(chr(c)).startswith("P")
}
"""ASCII characters of a Unicode punctuation category (``$+<=>^`|~`` are symbols: kept)."""


def kind_of(object_type: str) -> Kind | None:
    """``contacts`` or ``companies`` (the types the service deduplicates), else None."""
    t = object_type.strip().lower()
    if t in ("contacts", "contact"):
        return "contacts"
    if t in ("companies", "company"):
        return "companies"
    return None


def email_key(value: object) -> str | None:
    """Trimmed and lower-cased."""
    if not isinstance(value, str):
        return None
    return value.strip().lower() or None


def _bare(text: str) -> str:
    text = text.strip().lower()
    if "://" in text:
        text = _SCHEME.sub("", text)
    return text.removeprefix("//").removeprefix("www.")


def domain_key(value: object) -> str | None:
    """Lower case, no scheme, no ``www.``, no path, query, user info, port or trailing dot."""
    if not isinstance(value, str):
        return None
    host = _PATH.split(_bare(value), maxsplit=1)[0]
    host = host.rsplit("@", 1)[-1].split(":", 1)[0].rstrip(".")
    return host.removeprefix("www.") or None


def linkedin_key(value: object) -> str | None:
    """No scheme, ``www.``, query string, fragment or trailing slash; case-insensitive."""
    if not isinstance(value, str):
        return None
    return _QUERY.split(_bare(value), maxsplit=1)[0].rstrip("/") or None


def name_key(value: object) -> str | None:
    """Case-folded, Unicode punctuation removed, whitespace collapsed, one trailing legal
    suffix removed (a name that is only a suffix stays); None when nothing is left."""
    if not isinstance(value, str):
        return None
    text = value.casefold()
    if text.isascii():
        text = text.translate(_ASCII_PUNCTUATION)
    else:
        text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    words = text.split()
    if len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words = words[:-1]
    return " ".join(words) or None


RULES: dict[Kind, tuple[str, ...]] = {
    "contacts": ("email",),
    "companies": ("domain", "linkedin", "name"),
}
"""The dedup rules of each kind, in the order the service tries them."""

_FIELDS: dict[str, tuple[str, Callable[[object], str | None]]] = {
    "email": ("email", email_key),
    "domain": ("domain", domain_key),
    "linkedin": ("linkedin_url", linkedin_key),
}


def dedup_keys(kind: Kind, payload: dict[str, Any]) -> list[str | None]:
    """The row's key under each rule of ``kind`` (:data:`RULES`), None where it has none."""
    fields = payload.get("fields") or {}
    out: list[str | None] = []
    for rule in RULES[kind]:
        if rule == "name":
            out.append(name_key(payload.get("name")))
            continue
        fname, norm = _FIELDS[rule]
        value = fields.get(fname)
        if value is None and rule == "email" and payload.get("match_by") == "email":
            value = payload.get("match_value")  # a create by e-mail sets it
        out.append(norm(value))
    return out


def creates(payload: dict[str, Any]) -> bool:
    """Whether the entry may create (and so be deduplicated): not matched by id."""
    return payload.get("match_by") != "id"


def rule_text(rule: str, key: str | None, where: str) -> str:
    """``same name as row 12 after removing the legal suffix: 'davenport'``."""
    if rule == "name":
        return (
            f"same name as {where} once case, punctuation and a legal suffix are removed: {key!r}"
        )
    what = {"email": "e-mail", "domain": "domain", "linkedin": "LinkedIn URL"}[rule]
    return f"same {what} as {where} once normalised: {key!r}"


def merge_error(rule: str, key: str | None, where: str) -> str:
    return (
        f"merges with {where}: the service would fold it into that row's record "
        f"({rule_text(rule, key, where)}); not sent, so that it does not overwrite it. Make "
        "the rows differ, or declare `merges: expected` in the mapping"
    )


def predict(
    kind: Kind,
    rows: Iterable[tuple[int, bool, list[int | None]]],
    owners: Iterable[tuple[int, list[int | None]]] = (),
) -> dict[int, tuple[int, int]]:
    """Simulate the service's dedup over one source: row identity → (identity of the row
    whose record it folds into, index of the rule in :data:`RULES`).

    ``rows``: in source order, ``(identity, creates, key hashes per rule)`` of the rows that
    would be sent. ``owners``: rows that already have a record of their own (the ledger's):
    they claim their keys first and never fold."""
    n = len(RULES[kind])
    claims: list[dict[int, int]] = [{} for _ in range(n)]
    for rid, hashes in owners:
        for j in range(n):
            h = hashes[j]
            if h is not None:
                claims[j].setdefault(h, rid)
    out: dict[int, tuple[int, int]] = {}
    for rid, may_create, hashes in rows:
        if may_create:
            hit = next(
                (j for j in range(n) if hashes[j] is not None and hashes[j] in claims[j]), None
            )
            if hit is not None:
                target = claims[hit][hashes[hit]]  # type: ignore[index]
                if target != rid:
                    out[rid] = (target, hit)
                    continue
        for j in range(n):
            h = hashes[j]
            if h is not None:
                claims[j].setdefault(h, rid)
    return out

"""Which batch entries may be resent as they are after an answer that never came.

A timeout, a dropped connection or a 5xx after a batch went out may mean it was applied.
Resending an entry as is is safe only when a second application cannot create a second
record (nor write another row's record):

    entry                                                   resend as is
    match_by id / email (with a match_value)                yes: it updates what it matched
    match_by name with match_value == name                  yes: a second try finds the first
    match_by name with match_value != name                  no: the first try renamed it
    contacts without match_by, with fields.email            yes: the service dedups by email
    companies without match_by, with fields.domain          yes: the service dedups by domain
    anything else that creates (custom objects, no key,     no
    contacts without email, companies without domain)

An entry that is not safe is never rewritten to match by another key (a name may be another
row's record, made by this run, an earlier one, or someone else): the sender settles it by
reading the service (:mod:`recordsync.send.settle`) or holds it ``in_doubt``. When two
entries of one chunk may touch the same record (:func:`chunk_interferes`) even the safe ones,
but those matched by id, are held.
"""

from __future__ import annotations

from typing import Any

from recordsync.core.model import BatchInput

_CONTACTS = frozenset({"contacts", "contact"})
_COMPANIES = frozenset({"companies", "company"})


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


def _dedup_field(object_type: str) -> str | None:
    if object_type in _CONTACTS:
        return "email"
    if object_type in _COMPANIES:
        return "domain"
    return None


def rewrites_dedup_key(object_type: str, entry: BatchInput) -> bool:
    """True when ``entry`` may change the dedup key (email, domain) of a record it matched.

    After such an entry was applied, a record created earlier in the same chunk may no longer
    carry the key it was created with, so resending that earlier create would not find it.
    """
    field = _dedup_field(object_type)
    fields = entry.get("fields")
    if field is None or not isinstance(fields, dict) or field not in fields:
        return False
    match_by = entry.get("match_by")
    if match_by in ("id", "name"):
        return True
    return match_by == "email" and entry.get("match_value") != fields.get(field)


def _norm(value: Any) -> str | None:
    text = _text(value)
    return text.strip().lower() if text is not None else None


def chunk_interferes(object_type: str, entries: list[BatchInput]) -> bool:
    """True when two entries of one chunk may touch the same record, or one may re-key another's.

    Then the state after a maybe-applied send cannot be reasoned about entry by entry (a later
    entry may have renamed or re-keyed the record an earlier one created), so only entries
    matched by id are resent; the rest are held as in doubt. The cases: two entries with the
    same dedup key (email for contacts, domain for companies), an entry matched by name whose
    value is another entry's name, an entry that rewrites a dedup key (see
    :func:`rewrites_dedup_key`) in a chunk where another entry is found by that key (matched
    by email, or a create that relies on the service's dedup).
    """
    field = _dedup_field(object_type)
    keys: set[str] = set()
    names: dict[str, int] = {}
    name_matches: list[tuple[str, Any]] = []
    rewrites = keyed = 0
    for entry in entries:
        rewrites += rewrites_dedup_key(object_type, entry)
        keyed += _found_by_dedup_key(object_type, entry)
        if rewrites and keyed:
            return True
        fields = entry.get("fields")
        fields = fields if isinstance(fields, dict) else {}
        key = _norm(fields.get(field)) if field else None
        if key is None and entry.get("match_by") == "email":
            key = _norm(entry.get("match_value"))
        if key is not None:
            if key in keys:
                return True
            keys.add(key)
        name = entry.get("name")
        if isinstance(name, str):
            names[name] = names.get(name, 0) + 1
        value = entry.get("match_value")
        if entry.get("match_by") == "name" and isinstance(value, str):
            name_matches.append((value, name))
    values = [value for value, _ in name_matches]
    if len(values) != len(set(values)):
        return True
    # another entry carries the name this entry matches by
    return any(names.get(value, 0) - (own == value) > 0 for value, own in name_matches)


def _found_by_dedup_key(object_type: str, entry: BatchInput) -> bool:
    """True when a resend of ``entry`` finds its record by email or domain."""
    match_by = entry.get("match_by")
    if match_by == "email":
        return True
    return match_by is None and resend_as_is_safe(object_type, entry)


def resend_as_is_safe(object_type: str, entry: BatchInput) -> bool:
    """True when sending ``entry`` twice cannot create two records (the table above)."""
    match_by = entry.get("match_by")
    if match_by in ("id", "email") and entry.get("match_value") is not None:
        return True
    if match_by == "name":
        return entry.get("match_value") == entry.get("name")
    if match_by is not None:
        return False
    fields = entry.get("fields")
    fields = fields if isinstance(fields, dict) else {}
    if object_type in _CONTACTS and _text(fields.get("email")):
        return True
    return object_type in _COMPANIES and _text(fields.get("domain")) is not None

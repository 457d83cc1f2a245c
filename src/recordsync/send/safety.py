"""Which batch entries may be resent after an answer that never came (in-doubt sends).

A timeout or a dropped connection after a batch went out may mean it was applied. Resending
an entry is safe only when a second application cannot create a second record:

    entry                                                   resend
    match_by id / email                                     as is (it updates what it matched)
    match_by name with match_value == name                  as is
    contacts without match_by, with fields.email            as is (the service dedups by email)
    companies without match_by, with fields.domain          as is (the service dedups by domain)
    anything else that creates (custom objects, no key)     as ``match_by: name`` when that name
                                                            occurs once among the entries sent in
                                                            this step so far; otherwise held as
                                                            ``in_doubt`` for review

:class:`NameTracker` remembers the names sent in a step as 16-byte digests (bounded, small).
"""

from __future__ import annotations

from typing import Any

from recordsync.model import BatchInput

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
    :func:`rewrites_dedup_key`).
    """
    field = _dedup_field(object_type)
    keys: set[str] = set()
    names: dict[str, int] = {}
    name_matches: list[tuple[str, Any]] = []
    for entry in entries:
        if rewrites_dedup_key(object_type, entry):
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


def resend_as_is_safe(object_type: str, entry: BatchInput, *, dedup_trusted: bool = True) -> bool:
    """True when sending ``entry`` twice cannot create two records.

    ``dedup_trusted=False`` when another entry of the same chunk may have rewritten the dedup
    key of a record this entry created (see :func:`rewrites_dedup_key`): then a create that
    relies on the service's email/domain dedup is not safe to resend as is.
    """
    match_by = entry.get("match_by")
    if match_by in ("id", "email") and entry.get("match_value") is not None:
        return True
    if match_by == "name":
        return entry.get("match_value") == entry.get("name")
    if not dedup_trusted:
        return False
    fields = entry.get("fields")
    fields = fields if isinstance(fields, dict) else {}
    if object_type in _CONTACTS and _text(fields.get("email")):
        return True
    return object_type in _COMPANIES and _text(fields.get("domain")) is not None


class NameTracker:
    """Counts the names of entries sent in one step, to know which names are unique so far.

    Names are kept as their (per-process) hashes: two different names with the same hash
    count as one name sent twice, so a collision can only make a name look not unique, and
    its entry held in doubt rather than resent by name: the safe side."""

    __slots__ = ("_multi", "_seen")

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._multi: set[int] = set()

    def add(self, name: Any) -> None:
        if not isinstance(name, str):
            return
        d = hash(name)
        if d in self._seen:
            self._multi.add(d)
        else:
            self._seen.add(d)

    def unique(self, name: Any) -> bool:
        """True when ``name`` was sent exactly once in this step."""
        if not isinstance(name, str) or not name:
            return False
        d = hash(name)
        return d in self._seen and d not in self._multi


def as_name_match(entry: BatchInput) -> BatchInput:
    """The entry rewritten to update the record it may already have created."""
    return {**entry, "match_by": "name", "match_value": entry["name"]}

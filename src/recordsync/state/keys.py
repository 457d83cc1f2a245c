"""Source keys of the identity ledger, and the keys that references look up.

A mapping's ledger key is, by default, its match key as the mapping stage computes it
(``email:ann@x.io``, ``name:Acme Ltd``). A mapping can declare a stable key instead::

    ledger_key: {column: Contact ID}                 # as is (trimmed)
    ledger_key: {column: Website, normalize: domain} # https://www.Acme.com/x → acme.com

so that a changed e-mail is the same key (and, with ``match_by_ledger_id``, the same record).
A reference (``fields.company_id.ref``) normalises its column's value the way the
referenced mapping builds its keys, so ``https://www.Acme.com/`` in a deals export finds the
company keyed ``acme.com``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from recordsync.config.models import MappingConfig

Normalizer = Callable[[str], str | None]

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def _none(text: str) -> str | None:
    return text or None


def _lower(text: str) -> str | None:
    return text.lower() or None


def domain_key(text: str) -> str | None:
    """``https://www.Acme.com:443/about?x`` → ``acme.com``; ``ann@acme.com`` → ``acme.com``."""
    t = _SCHEME.sub("", text.strip().lower())
    if "@" in t and "/" not in t.split("@", 1)[0]:
        t = t.rsplit("@", 1)[1]
    t = re.split(r"[/?#]", t, maxsplit=1)[0]
    t = t.split(":", 1)[0].rstrip(".")
    if t.startswith("www."):
        t = t[4:]
    return t or None


NORMALIZERS: dict[str, Normalizer] = {
    "none": _none,
    "lower": _lower,
    "email": _lower,
    "domain": domain_key,
}


def cell_text(value: Any) -> str | None:
    """A source cell as key text: None for blank; integral floats without ``.0``."""
    if value is None:
        return None
    if isinstance(value, float):
        if value != value:  # NaN
            return None
        if value.is_integer():
            value = int(value)
    text = str(value).strip()
    return text or None


def ledger_key_of(mapping: MappingConfig, values: dict[str, Any]) -> str | None:
    """The declared ledger key of a source row (``mapping.ledger_key`` must be set)."""
    spec = mapping.ledger_key
    assert spec is not None
    text = cell_text(values.get(spec.column))
    return NORMALIZERS[spec.normalize](text) if text is not None else None


def ledger_keys_of(mapping: MappingConfig, cells: list[Any]) -> list[str | None]:
    """:func:`ledger_key_of` of rows whose ledger-key column holds ``cells``."""
    spec = mapping.ledger_key
    assert spec is not None
    norm = NORMALIZERS[spec.normalize]
    out: list[str | None] = []
    for c in cells:  # a text cell (nearly every one) without cell_text's call
        t = c.strip() if type(c) is str else cell_text(c)
        out.append(norm(t) if t else None)
    return out


def reference_normalizer(mapping: MappingConfig) -> Normalizer:
    """How a value referring to ``mapping``'s records becomes a key of its ledger: its
    ``ledger_key`` normaliser, else its first match rule (``email:``, ``name:``, ``id:``)."""
    if mapping.ledger_key is not None:
        return NORMALIZERS[mapping.ledger_key.normalize]
    if not mapping.match_by:
        return _none
    by = mapping.match_by[0].by
    if by == "email":
        return lambda t: f"email:{t.lower()}" if t else None
    return lambda t: f"{by}:{t}" if t else None

"""Dedup keys: the normalised forms under which records are matched on create.

Each function returns the key stored in an indexed column of the records table, or None
when the value gives no key (then that rule cannot match). They are pure functions; the
properties they guarantee are checked with hypothesis in tests/sandbox/test_normalize.py.
"""

from __future__ import annotations

import re
import unicodedata

LEGAL_SUFFIXES = frozenset(
    {"inc", "llc", "ltd", "gmbh", "corp", "corporation", "co", "sa", "ag", "bv", "plc"}
)
"""Trailing legal suffixes removed (once) before names are compared; after punctuation
removal, so ``Inc.``, ``S.A.`` and ``B.V.`` are covered."""

_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://")
_WS = re.compile(r"\s+")


def email_key(value: object) -> str | None:
    """Contacts match on the email trimmed and lower-cased."""
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    return key or None


def _strip_scheme_www(text: str) -> str:
    text = _SCHEME.sub("", text.strip().lower())
    text = text.removeprefix("//")
    return text.removeprefix("www.")


def domain_key(value: object) -> str | None:
    """``https://www.Acme.com/about`` → ``acme.com``: lower case, no scheme, no ``www.``,
    no path, query, fragment, user info or port, no trailing dot."""
    if not isinstance(value, str):
        return None
    host = _strip_scheme_www(value)
    host = re.split(r"[/?#]", host, maxsplit=1)[0]
    host = host.rsplit("@", 1)[-1]
    host = host.split(":", 1)[0].rstrip(".")
    host = host.removeprefix("www.")
    return host or None


def linkedin_key(value: object) -> str | None:
    """LinkedIn URLs compare without scheme, ``www.``, query string, fragment and trailing
    slashes, case-insensitively."""
    if not isinstance(value, str):
        return None
    url = _strip_scheme_www(value)
    url = re.split(r"[?#]", url, maxsplit=1)[0].rstrip("/")
    return url or None


def _without_punctuation(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def name_key(value: object) -> str | None:
    """Company name similarity: case-folded, punctuation removed, whitespace collapsed,
    one trailing legal suffix removed. A name that is only a suffix is compared as is."""
    if not isinstance(value, str):
        return None
    text = _WS.sub(" ", _without_punctuation(value.casefold())).strip()
    if not text:
        return None
    words = text.split(" ")
    if len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words = words[:-1]
    return " ".join(words)

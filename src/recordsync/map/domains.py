"""The ``transform:`` option of a field: a URL or an e-mail address → its domain.

    transform: url_domain     https://www.Example.com:8443/about?x=1 → example.com
    transform: email_domain   Ann.Lee@Sales.Example.com              → sales.example.com
    transform: domain         either (an ``@`` before any ``/`` reads as an e-mail)

The domain is the host, lower-cased, without a scheme, user name and password, port, path,
query, fragment, trailing dot or one leading ``www.``. Internationalised names stay in
Unicode (NFC, lower case), checked by encoding them as IDNA. A value with no such host (no
dot, a space, an empty label, a label longer than 63 characters or with characters a host
cannot have, a numeric top-level label such as an IP address, a bad port) is a row error.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal
from urllib.parse import urlsplit

from recordsync.validate.distinct import Outcome

Transform = Literal["domain", "url_domain", "email_domain"]
TRANSFORMS: tuple[Transform, ...] = ("domain", "url_domain", "email_domain")

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def host_domain(host: str) -> str | None:
    """A host name as the domain to store, or None when it cannot be one."""
    host = unicodedata.normalize("NFC", host.strip().lower()).rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    labels = host.split(".")
    if len(labels) < 2:
        return None
    try:
        ascii_labels = host.encode("idna").decode("ascii").split(".")
    except UnicodeError:
        return None
    if not all(_LABEL.match(label) for label in ascii_labels):
        return None
    if ascii_labels[-1].isdigit():  # an IP address, or no top-level domain
        return None
    return host


def url_domain(text: str) -> str | None:
    """The domain of a URL, with or without a scheme; None when there is none."""
    t = text.strip()
    if not t or any(c.isspace() for c in t):
        return None
    rest = _SCHEME.sub("", t, count=1)
    if rest.startswith("//"):
        rest = rest[2:]
    if "\\" in rest:
        return None
    try:
        parts = urlsplit("//" + rest)
        parts.port  # noqa: B018 (a port that is not a number 0-65535 raises)
    except ValueError:
        return None
    host = parts.hostname
    if not host or parts.username == "":  # "@example.com": an empty user name
        return None
    return host_domain(host)


def email_domain(text: str) -> str | None:
    """The domain of an e-mail address (``local@domain``); None when it is not one."""
    t = text.strip()
    if t[:7].lower() == "mailto:":
        t = t[7:]
    local, at, domain = t.rpartition("@")
    if not at or not local or any(c.isspace() or c in "/:@" for c in local):
        return None
    if any(c.isspace() or c in "/?#:" for c in domain):
        return None
    return host_domain(domain)


_WHAT = {
    "url_domain": "is not a URL with a domain (e.g. https://www.example.com/about)",
    "email_domain": "is not an e-mail address with a domain (e.g. ann@example.com)",
    "domain": "is not a URL, domain or e-mail address with a domain (e.g. example.com)",
}


def _looks_like_email(text: str) -> bool:
    head = _SCHEME.sub("", text.strip(), count=1)
    at = head.find("@")
    return at > 0 and "/" not in head[:at] and ":" not in head[:at] and not _SCHEME.match(text)


def transform_one(name: Transform, text: str) -> Outcome:
    """``(domain, None, None)``, or ``(None, reason, None)`` naming what was expected."""
    if name == "email_domain" or (name == "domain" and _looks_like_email(text)):
        found = email_domain(text)
    else:
        found = url_domain(text)
    if found is None:
        return None, f"{_WHAT[name]} (transform: {name})", None
    return found, None, None

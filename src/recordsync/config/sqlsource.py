"""A query source's PostgreSQL connection string: never a password in a mapping file (the
source's checks are :class:`recordsync.config.mapping_parts.SourceConfig`'s)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PASSWORD_KW = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)


def has_password(dsn: str) -> bool:
    """True when the connection string ``dsn`` holds a password: a URI's ``user:password@``
    or ``?password=``, or a ``password=`` keyword."""
    text = dsn.strip()
    if "://" in text:
        parts = urlsplit(text)
        if parts.password is not None:
            return True
        return "password=" in parts.query.lower()
    return bool(_PASSWORD_KW.search(text))


def redact(text: str, dsn: str) -> str:
    """``text`` with the password of ``dsn`` (if any) replaced by stars: for messages that
    may quote the connection string."""
    secret: str | None = None
    if "://" in dsn:
        secret = urlsplit(dsn).password
    else:
        found = re.search(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn, re.IGNORECASE)
        secret = found.group(1).strip("'") if found else None
    return text.replace(secret, "**********") if secret else text

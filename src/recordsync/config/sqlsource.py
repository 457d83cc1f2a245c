"""A query source's PostgreSQL connection string (never a password in a mapping file) and
DuckDB's memory limit (a size); the source's other checks are
:class:`recordsync.config.mapping_parts.SourceConfig`'s."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PASSWORD_KW = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b)\s*", re.IGNORECASE)
_POWER = {"K": 1, "M": 2, "G": 3, "T": 4}
MIN_MEMORY = 16_000_000
"""The least DuckDB working memory a query source may be given (bytes)."""


def memory_size(value: object) -> str:
    """``source.memory_limit`` as DuckDB spells it (``64MB``, ``1.5GB``, ``512MiB``);
    ValueError naming what to write when it is not a size of at least 16 MB."""
    found = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise ValueError(
            f"{value!r} is not a size: write a number and a unit, e.g. 64MB, 512MB or 2GB"
        )
    number, unit = float(found.group(1)), found.group(2).upper().replace("I", "i")
    if number * (1024 if "i" in unit else 1000) ** _POWER[unit[0]] < MIN_MEMORY:
        raise ValueError(f"{value!r} is too little for DuckDB to run a query in: at least 16MB")
    return found.group(1) + unit


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

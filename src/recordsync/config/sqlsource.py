"""Checks of a query source (``source: {query: ..., key: ...}``), and the PostgreSQL
connection string: never a password in a mapping file."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from recordsync.config.models import SourceConfig

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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


def check_query_source(src: SourceConfig) -> None:
    """ValueError (reported by the config loader with the file and line) when a query
    source's options do not fit together."""
    if src.path:
        raise ValueError("give 'path' (a file) or 'query' (SQL), not both")
    file_only = [k for k in ("format", "columns") if getattr(src, k) is not None]
    if file_only:
        raise ValueError(f"{', '.join(file_only)}: only for a file source, not a 'query'")
    if not src.query or not src.query.strip():
        raise ValueError("'query' is empty")
    if not src.key:
        raise ValueError(
            "a query source needs 'key': the column(s) that identify a row across runs"
            " (e.g. key: id); its rows are read in that order"
        )
    if src.engine == "duckdb":
        if src.dsn is not None or src.dsn_env is not None:
            raise ValueError("dsn/dsn_env are for engine: postgres (DuckDB takes 'database')")
        return
    if src.database is not None:
        raise ValueError("'database' is for engine: duckdb; PostgreSQL takes dsn_env")
    if (src.dsn is None) == (src.dsn_env is None):
        raise ValueError(
            "engine: postgres needs 'dsn_env': the name of the environment variable that holds"
            " the connection string (or 'dsn' without a password)"
        )
    if src.dsn_env is not None and not _ENV_NAME.fullmatch(src.dsn_env):
        raise ValueError(
            "'dsn_env' is the NAME of an environment variable (e.g. CRM_DB_DSN), not the"
            " connection string itself"
        )
    if src.dsn is not None and has_password(src.dsn):
        raise ValueError(
            "'dsn' holds a password: never put one in a mapping file. Put the connection"
            " string in an environment variable and name it with dsn_env (or give the"
            " password through PGPASSWORD or ~/.pgpass)"
        )

"""Where the state lives: an SQLite file (a :class:`~pathlib.Path`, the default) or a
PostgreSQL database (a :class:`PgUrl`, from ``--state-db postgresql://...`` or
``$RECORDSYNC_STATE_DB``; docs/state.md, "State on PostgreSQL").

A :class:`PgUrl` never shows its password: ``str()``, ``repr()`` and f-strings print the URL
with the password replaced by stars, so the location can be named in logs, reports,
summary.json and error messages. The password itself is read only when connecting
(:meth:`PgUrl.reveal`); better still, keep it out of the URL: libpq reads ``PGPASSWORD`` and
``~/.pgpass`` (``PGPASSFILE``) when the URL has none.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from recordsync.core.secret import Secret, redact

SCHEMES = ("postgresql://", "postgres://")
STARS = "**********"


class PgUrl:
    """A PostgreSQL connection URL whose password never shows (see the module docstring)."""

    __slots__ = ("_passwords", "_url", "shown")

    def __init__(self, url: str) -> None:
        self._url = Secret(url)
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        raw = parts.password or next((v for k, v in query if k == "password"), None)
        self._passwords = (Secret(raw), Secret(unquote(raw))) if raw else ()
        """The password as written in the URL and decoded (%-escapes), to hide both."""
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.split(':', 1)[0]}:{STARS}@{host}"
        shown_query = "&".join(
            f"password={STARS}" if p.split("=", 1)[0] == "password" else p
            for p in parts.query.split("&")
        )
        self.shown = f"{parts.scheme}://{netloc}{parts.path}" + (
            f"?{shown_query}" if parts.query else ""
        )
        """The URL with its password (if any) replaced by stars."""

    def reveal(self) -> str:
        """The URL with its password: only for the connection itself."""
        return self._url.reveal()

    def hide(self, text: str) -> str:
        """``text`` with this URL's password (and the whole URL) replaced by stars."""
        return redact(text.replace(self._url.reveal(), self.shown), *self._passwords)

    def __str__(self) -> str:
        return self.shown

    def __repr__(self) -> str:
        return f"PgUrl({self.shown!r})"

    def __format__(self, spec: str) -> str:
        return format(self.shown, spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PgUrl) and self._url == other._url

    def __hash__(self) -> int:
        return hash(("PgUrl", self._url))

    def __reduce__(self) -> str:
        raise TypeError("PgUrl values are not picklable (they may hold a password)")


StateLocation = Path | PgUrl
"""An SQLite file or a PostgreSQL database."""

DEFAULT_STATE_PATH = Path(".recordsync") / "state.db"
STATE_PATH_ENV = "RECORDSYNC_STATE_DB"


def is_pg_url(value: str) -> bool:
    return value.strip().lower().startswith(SCHEMES)


def state_location(value: str | Path | PgUrl | None) -> StateLocation:
    """``value`` as a location: a ``postgresql://`` URL, else a file path; None: the
    default (``$RECORDSYNC_STATE_DB``, else ``.recordsync/state.db``)."""
    if value is None:
        env = os.environ.get(STATE_PATH_ENV)
        return state_location(env) if env else DEFAULT_STATE_PATH
    if isinstance(value, PgUrl | Path):
        return value
    return PgUrl(value.strip()) if is_pg_url(value) else Path(value)

"""A query source's SQL text, the same for DuckDB and PostgreSQL (:mod:`.sql`, :mod:`.sql_pg`)."""

from __future__ import annotations

from recordsync.config.models import SourceConfig


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (DuckDB and PostgreSQL alike)."""
    return '"' + name.replace('"', '""') + '"'


def wrapped_query(
    src: SourceConfig, columns: list[str] | None, *, limit0: bool = False, order: bool = True
) -> str:
    """The source's query narrowed to ``columns`` (all when None) and ordered by its key
    (``order=False``: in the query's own order, for rows known to come in key order)."""
    assert src.query is not None and src.key
    body = src.query.strip().rstrip(";")
    cols = "*" if columns is None else ", ".join(quote_ident(c) for c in columns) or "*"
    by = ", ".join(f"q.{quote_ident(k)}" for k in src.key)
    if limit0:
        return f"SELECT * FROM (\n{body}\n) AS q LIMIT 0"
    if not order:
        return f"SELECT {cols} FROM (\n{body}\n) AS q"
    return f"SELECT {cols} FROM (\n{body}\n) AS q ORDER BY {by}"

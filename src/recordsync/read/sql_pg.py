"""PostgreSQL query sources: a psycopg 3 server-side cursor, ``batch_size`` rows at a time.

The connection string comes from the environment variable named by ``source.dsn_env`` (or a
``source.dsn`` without a password); it never appears in a message. The query runs in a
read-only transaction. Columns are typed from the result's type OIDs, so every batch of a
column has one Arrow type (text when the type has no closer one: numeric, uuid, json...).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from recordsync.config.models import SourceConfig
from recordsync.config.sqlsource import redact
from recordsync.core.errors import ConfigError, SourceError
from recordsync.read.sql_text import quote_ident, wrapped_query

_TYPES: dict[int, pa.DataType] = {
    16: pa.bool_(),
    20: pa.int64(),
    21: pa.int64(),
    23: pa.int64(),
    700: pa.float64(),
    701: pa.float64(),
    25: pa.string(),
    1042: pa.string(),
    1043: pa.string(),
    19: pa.string(),
    1082: pa.date32(),
    1114: pa.timestamp("us"),
    1184: pa.timestamp("us", tz="UTC"),
}
"""Arrow types of PostgreSQL type OIDs; any other type is read as text."""
_AS_TEXT = (114, 3802, 1700, 2950, 1083, 1266, 1186)
"""json, jsonb, numeric, uuid, time, timetz, interval: loaded as the server writes them
(``{"a": 1}``, ``1.50``), never as a Python object's ``str``."""


def _dsn(src: SourceConfig) -> str:
    if src.dsn is not None:
        return src.dsn
    assert src.dsn_env is not None
    value = os.environ.get(src.dsn_env, "")
    if not value.strip():
        raise ConfigError(
            f"environment variable {src.dsn_env} is not set: it should hold the PostgreSQL"
            " connection string of this source",
            key="source.dsn_env",
            hint=f"export {src.dsn_env}='postgresql://user@host:5432/dbname' (the password"
            " in it, or in PGPASSWORD / ~/.pgpass)",
        )
    return value


def _connect(src: SourceConfig) -> tuple[Any, str]:
    try:
        import psycopg
    except ImportError:
        raise SourceError(
            "source.engine postgres needs the Python package 'psycopg', which is not installed",
            key="source.engine",
            hint="pip install 'recordsync[postgres]'",
        ) from None
    dsn = _dsn(src)
    try:
        conn = psycopg.connect(dsn, autocommit=False)
    except psycopg.Error as exc:
        raise SourceError(
            f"{src.label}: cannot connect to PostgreSQL: {redact(str(exc).strip(), dsn)}",
            key="source.dsn_env" if src.dsn_env else "source.dsn",
            hint="check the connection string (host, port, database, user) and that the"
            " server is up",
        ) from None
    conn.read_only = True
    from psycopg.types.string import TextLoader

    for oid in _AS_TEXT:  # PostgreSQL's own text of these values, not Python's repr
        conn.adapters.register_loader(oid, TextLoader)
    return conn, dsn


def _query_error(src: SourceConfig, exc: Exception, dsn: str) -> SourceError:
    return SourceError(
        f"{src.label}: the PostgreSQL query failed: {redact(str(exc).strip(), dsn)}",
        key="source.query",
        hint="check the query and that it returns the key column(s) "
        + ", ".join(map(repr, src.key or [])),
    )


def pg_columns(src: SourceConfig) -> list[str]:
    """The query's column names (run with ``LIMIT 0``)."""
    conn, dsn = _connect(src)  # first: it names the extra when psycopg is missing
    import psycopg

    try:
        with conn.cursor() as cur:
            cur.execute(wrapped_query(src, None, limit0=True).encode())
            return [d.name for d in cur.description or []]
    except psycopg.Error as exc:
        raise _query_error(src, exc, dsn) from None
    finally:
        conn.close()


def _column(values: list[Any], typ: pa.DataType | None) -> pa.Array:
    if typ is None:
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())
    return pa.array(values, type=typ)


def pg_batches(src: SourceConfig, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The query's rows in key order, ``src.batch_size`` at a time (a named cursor: the
    server keeps the result; the client holds one batch)."""
    conn, dsn = _connect(src)
    import psycopg

    try:
        with conn.transaction(), conn.cursor(name="recordsync_source") as cur:
            cur.itersize = src.batch_size
            try:
                cur.execute(wrapped_query(src, columns).encode())
            except psycopg.Error as exc:
                raise _query_error(src, exc, dsn) from None
            desc = cur.description or []
            names = [d.name for d in desc]
            types = [_TYPES.get(d.type_code) for d in desc]
            fields = [pa.field(n, t or pa.string()) for n, t in zip(names, types, strict=True)]
            schema = pa.schema(fields)
            while True:
                try:
                    rows = cur.fetchmany(src.batch_size)
                except psycopg.Error as exc:
                    raise _query_error(src, exc, dsn) from None
                if not rows:
                    return
                cols = list(zip(*rows, strict=True))
                arrays = [_column(list(c), t) for c, t in zip(cols, types, strict=True)]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        conn.close()


__all__ = ["pg_batches", "pg_columns", "quote_ident"]

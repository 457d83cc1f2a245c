"""PostgreSQL query sources, read straight into Arrow by the ADBC PostgreSQL driver.

The driver has the server write the result with ``COPY ... TO STDOUT (FORMAT binary)`` and
decodes it in C into Arrow record batches of a bounded size, so the rows never become Python
values and memory holds about one batch however many rows the query returns.
:func:`pg_record_batches` is the one way recordsync reads a PostgreSQL query: SQL text (with
``$1``-style parameters) in, record batches of at most ``batch_rows`` rows out, in the order
the SQL gives them.

Every column gets the Arrow type its PostgreSQL type has always had in recordsync: integers
as int64, ``real`` and ``double precision`` as float64 (``real`` through its text, so
``0.1`` stays 0.1), booleans, dates, timestamps (``timestamptz`` in UTC), and every other
type (numeric, uuid, json, time, interval, arrays, ...) as the text PostgreSQL writes for it
(``1.50``, ``{"a": 1}``, ``{1,2}``). A date or timestamp outside years 1 to 9999
(``infinity``, a BC date) fails the query naming the column, rather than arriving as some
other date. The connection string comes from the environment variable named by
``source.dsn_env`` (or a ``source.dsn`` without a password); it never appears in a message.
The session is read-only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from recordsync.config.models import SourceConfig
from recordsync.config.sqlsource import redact
from recordsync.core.errors import ConfigError, SourceError
from recordsync.read.sql_text import quote_ident, wrapped_query

_AS_IS = frozenset({"int8", "float8", "bool", "text", "varchar", "bpchar", "name"})
"""PostgreSQL types the driver already gives as recordsync's Arrow type."""
_CASTS = {"int2": "{}::int8", "int4": "{}::int8", "float4": "{}::text::float8"}
"""Types brought to recordsync's Arrow type in the query (``real`` through its shortest text:
the value a reader of the text gets, not the binary float widened)."""
_DATED = frozenset({"date", "timestamp", "timestamptz"})
"""Types whose values outside years 1 to 9999 are refused (:func:`_dated`)."""
DRIVER_BATCH_BYTES = 4 << 20
"""About how many bytes of rows the driver decodes at a time (its default, 16 MB, holds
some 70 MB more at the peak for no speed gained)."""
BATCH_HINT = "adbc.postgresql.batch_size_hint_bytes"
TYPE_KEY = b"POSTGRESQL:type"
"""The field metadata in which the driver names a column's PostgreSQL type."""


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


def _dsn_key(src: SourceConfig) -> str:
    return "source.dsn_env" if src.dsn_env else "source.dsn"


def _driver() -> Any:
    try:
        import adbc_driver_postgresql.dbapi as adbc
    except ImportError:
        raise SourceError(
            "source.engine postgres needs the Python package 'adbc-driver-postgresql',"
            " which is not installed",
            key="source.engine",
            hint="pip install 'recordsync[postgres]'",
        ) from None
    return adbc


def _clean(exc: Exception, dsn: str) -> str:
    """The driver's message, without the query text it quotes and without the password."""
    text = re.sub(r"\s*Query was: .*?(?=\. SQLSTATE|\Z)", "", str(exc), flags=re.DOTALL)
    text = re.sub(r"\[libpq\] (Execution error \[PGRES_\w+\]: )?", "", text)
    return redact(" ".join(text.split()), dsn)


def connect(dsn: str, *, label: str, dsn_key: str) -> Any:
    """A read-only ADBC connection (autocommit: each query its own transaction). A failure
    is a SourceError naming ``label`` and the config key ``dsn_key``, without the password."""
    adbc = _driver()
    try:
        conn = adbc.connect(dsn, autocommit=True)
    except Exception as exc:  # the driver's errors have no common base with OSError's
        raise SourceError(
            f"{label}: cannot connect to PostgreSQL: {_clean(exc, dsn)}",
            key=dsn_key,
            hint="check the connection string (host, port, database, user, password) and"
            " that the server is up",
        ) from None
    try:
        with conn.cursor() as cur:
            cur.execute("SET default_transaction_read_only = on")
    except Exception:
        conn.close()
        raise
    return conn


def _dated(expr: str, name: str, pg_type: str) -> str:
    """``expr``, or a query error naming column ``name`` for a value outside years 1 to 9999
    (which Arrow would hold, but no reader of the row could)."""
    low, high = "'0001-01-01'", f"'10000-01-01'::{pg_type}"
    what = quote_ident(name).replace("'", "''")
    bad = f"('column {what} holds a {pg_type} outside years 1 to 9999: ' || {expr}::text)"
    return (
        f"CASE WHEN {expr} >= {low} AND {expr} < {high} OR {expr} IS NULL THEN {expr}"
        f" ELSE {bad}::{pg_type} END"
    )


def _select(schema: pa.Schema) -> str:
    """The select list giving each column of ``schema`` (a described query ``q``) its
    recordsync type."""
    out = []
    for field in schema:
        ref = f"q.{quote_ident(field.name)}"
        pg_type = (field.metadata or {}).get(TYPE_KEY, b"").decode()
        if pg_type in _AS_IS:
            expr = ref
        elif pg_type in _CASTS:
            expr = _CASTS[pg_type].format(ref)
        elif pg_type in _DATED:
            expr = _dated(ref, field.name, pg_type)
        else:
            expr = f"{ref}::text"
        out.append(f"{expr} AS {quote_ident(field.name)}")
    return ", ".join(out) or "*"


def _describe(cur: Any, sql: str, params: Sequence[Any] | None) -> pa.Schema:
    cur.execute(f"SELECT * FROM (\n{sql}\n) AS q LIMIT 0", parameters=params or None)
    return cur.fetch_arrow_table().schema


def describe(
    dsn: str, sql: str, params: Sequence[Any] | None = None, *, label: str, dsn_key: str,
    query_key: str = "source.query",
) -> list[str]:
    """The column names of ``sql`` (run with ``LIMIT 0``)."""
    conn = connect(dsn, label=label, dsn_key=dsn_key)
    try:
        with conn.cursor() as cur:
            return list(_describe(cur, sql, params).names)
    except Exception as exc:
        raise _query_error(label, exc, dsn, query_key) from None
    finally:
        conn.close()


def _query_error(label: str, exc: Exception, dsn: str, key: str) -> SourceError:
    return SourceError(
        f"{label}: the PostgreSQL query failed: {_clean(exc, dsn)}",
        key=key,
        hint="check the query, and that it returns the key column(s)",
    )


def rebatch(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` cut and joined into batches of exactly ``rows`` rows (the last one fewer),
    in order; no empty batch."""
    pending: list[pa.RecordBatch] = []
    have = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        have += batch.num_rows
        if have < rows:
            continue
        whole = pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
        start = 0
        while have - start >= rows:
            yield whole.slice(start, rows)
            start += rows
        pending = [whole.slice(start)] if start < have else []
        have -= start
    if have:
        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]


def pg_record_batches(
    dsn: str,
    sql: str,
    params: Sequence[Any] | None = None,
    *,
    batch_rows: int,
    label: str,
    dsn_key: str = "source.dsn_env",
    query_key: str = "source.query",
) -> Iterator[pa.RecordBatch]:
    """The rows of ``sql`` (``$1``, ``$2``... bound to ``params``) as record batches of
    ``batch_rows`` rows (the last one fewer), in the order the SQL gives them, typed as the
    module says. Memory holds about one batch of the driver (a few MB) and one of
    ``batch_rows``. Errors are SourceErrors naming ``label`` and ``dsn_key`` (connecting) or
    ``query_key`` (the query), without the password; closing the iterator early closes the
    connection."""
    conn = connect(dsn, label=label, dsn_key=dsn_key)
    try:
        with conn.cursor() as cur:
            try:
                schema = _describe(cur, sql, params)
                # a projection of the query: PostgreSQL keeps the order the query gives
                typed = f"SELECT {_select(schema)} FROM (\n{sql}\n) AS q"
                if params:
                    reader: Any = _fetched(cur, typed, params, batch_rows)
                else:
                    cur.adbc_statement.set_options(**{BATCH_HINT: str(DRIVER_BATCH_BYTES)})
                    cur.execute(typed)
                    reader = cur.fetch_record_batch()
            except Exception as exc:
                raise _query_error(label, exc, dsn, query_key) from None
            yield from rebatch(_checked(reader, label, dsn, query_key), batch_rows)
    finally:
        conn.close()


def _fetched(
    cur: Any, sql: str, params: Sequence[Any], rows: int
) -> Iterator[pa.RecordBatch]:
    """The rows of ``sql`` with bound ``params`` through a server-side cursor, ``rows`` at a
    time (the driver holds a parameterised result whole; COPY takes no parameters)."""
    cur.execute("BEGIN READ ONLY")
    cur.execute(f"DECLARE recordsync_source NO SCROLL CURSOR FOR {sql}", parameters=params)
    cur.adbc_statement.set_options(**{"adbc.postgresql.use_copy": "false"})
    while True:
        cur.execute(f"FETCH FORWARD {int(rows)} FROM recordsync_source")
        table = cur.fetch_arrow_table()
        if table.num_rows == 0:
            return
        yield from table.to_batches()


def _checked(reader: Any, label: str, dsn: str, key: str) -> Iterator[pa.RecordBatch]:
    """The driver's batches, its errors (a row the query fails on) as SourceErrors."""
    batches = iter(reader)
    plain: pa.Schema | None = None  # the driver's schema without its field metadata
    while True:
        try:
            got = next(batches, None)
        except Exception as exc:
            raise _query_error(label, exc, dsn, key) from None
        if got is None:
            return
        if plain is None:
            plain = pa.schema([pa.field(f.name, f.type, f.nullable) for f in got.schema])
        yield pa.RecordBatch.from_arrays(got.columns, schema=plain)


def pg_columns(src: SourceConfig) -> list[str]:
    """The source query's column names (run with ``LIMIT 0``)."""
    _driver()  # first: it names the extra when the driver is missing
    return describe(
        _dsn(src), wrapped_query(src, None, limit0=True), label=src.label, dsn_key=_dsn_key(src)
    )


def pg_batches(src: SourceConfig, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The source query's rows in key order, ``src.batch_size`` at a time."""
    _driver()
    return pg_record_batches(
        _dsn(src),
        wrapped_query(src, columns),
        batch_rows=src.batch_size,
        label=src.label,
        dsn_key=_dsn_key(src),
    )


__all__ = ["connect", "describe", "pg_batches", "pg_columns", "pg_record_batches", "rebatch"]

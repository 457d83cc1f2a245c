"""Query sources: the rows of a SQL query, streamed as Arrow record batches.

DuckDB (embedded, the default engine) runs the query in-process over local files or a DuckDB
database file, and hands its result over as an Arrow stream (:func:`duckdb_record_batches`).
PostgreSQL is read by the ADBC PostgreSQL driver, which decodes the server's binary COPY
output into Arrow (:mod:`.sql_pg`). Either way no row becomes Python values, and memory holds
about one batch.

The query is wrapped as ``SELECT <columns> FROM (<query>) ORDER BY <key>``: every pass over
the source (the duplicate scan, then the rows) sees the rows in the same order, so a row's
number (``source_row``, 1-based in key order) names the same row in each pass and in the
report, and the key columns identify it across runs. Rows that share a key are the exception:
``ORDER BY`` leaves them in any order, and a pass may read them in another order than the one
before (the nightly path's second pass checks its cells against the first's,
:mod:`recordsync.prepare.digests`).

On DuckDB that sort is most of the read's memory, and a query's rows often come in key order
already. Each pass therefore first reads the key column(s) alone, without ``ORDER BY`` (a
fraction of the read: DuckDB reads only the columns a query uses, and one thread keeps the
order the same every time); when they never go back (:class:`.key_order.KeyOrder`: DuckDB's
order, NULLs last, key types compared exactly as DuckDB does, no collation), the pass reads
the query without ``ORDER BY`` and checks each batch again, and rows that go back then end
the read with a :class:`SourceError` rather than a wrong row number. Otherwise it sorts.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.batch import SourceBatch
from recordsync.read.key_order import EXACT_TYPES, KeyOrder, binary_collation_probe
from recordsync.read.sql_text import quote_ident, wrapped_query

log = logging.getLogger(__name__)

ORDER_CHECK_ROWS = 1 << 16
"""Rows per batch of the key-order check (key columns only)."""


def null_keys(batch: pa.RecordBatch, src: SourceConfig) -> dict[int, str]:
    """``{batch row: error}`` for the rows whose key is null (or, for text, empty): such a
    row cannot be told apart across runs, so it is ``invalid`` rather than sent."""
    names = batch.schema.names
    out: dict[int, str] = {}
    for k in src.key or []:
        if k not in names:
            continue
        col = batch.column(names.index(k))
        bad = pc.is_null(col)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            bad = pc.or_(bad, pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(col)), 0))
        for i in np.flatnonzero(bad.fill_null(True).to_numpy(zero_copy_only=False)).tolist():
            out.setdefault(
                i,
                f"key column {k!r} is empty: a row of {src.label} needs its key (source.key)"
                " to be told apart across runs; fix the query or the data",
            )
    return out


def _missing_extra(engine: str, package: str, extra: str) -> SourceError:
    return SourceError(
        f"source.engine {engine} needs the Python package {package!r}, which is not installed",
        key="source.engine",
        hint=f"pip install 'recordsync[{extra}]'",
    )


DUCKDB_THREADS = 1
"""DuckDB's threads for a query source. Each thread of a sort keeps buffers of its own, so
one thread lets the sort by key run in a small ``source.memory_limit`` (the query's working
memory, 128 MB unless the mapping says otherwise: what does not fit spills to a temporary
directory, so a large query keeps recordsync's memory bounded; DuckDB's default is 80% of
the machine's RAM); the run's other work (mapping, sending) has the other cores."""


DUCKDB_STREAMING_BUFFER = "1MB"
"""What DuckDB computes of a streamed result ahead of the batch asked for (its
``streaming_buffer_size``; 10 MiB in DuckDB 2.0). Batches are asked for one at a time, from
a read-ahead thread, so more buffered saves no time: a 1M-row Parquet read alone peaked
5–9 MB lower with it, for the same CPU, and a first nightly run about 8 MB lower. It is not
``source.memory_limit``, which bounds DuckDB's buffer pool (what a sort or a join holds)."""


def duckdb_settings(src: SourceConfig) -> list[str]:
    """The statements that bound a DuckDB connection's memory for ``src``: its memory limit
    and threads, and no progress bar (DuckDB prints one to the terminal for a query that
    takes more than two seconds). Then, a setting a DuckDB may not know (it is skipped
    there): the result computed ahead of the batch asked for (:data:`DUCKDB_STREAMING_BUFFER`)."""
    return [
        f"SET memory_limit = '{src.memory_limit}'",
        f"SET threads = {DUCKDB_THREADS}",
        "SET enable_progress_bar = false",
        f"SET streaming_buffer_size = '{DUCKDB_STREAMING_BUFFER}'",
    ]


_OPTIONAL_SETTINGS = 1
"""The last settings of :func:`duckdb_settings` that only save memory: a DuckDB that does
not know them reads the same rows without them."""


def _duckdb_connect(src: SourceConfig, base_dir: Path, spill: str | None = None) -> Any:
    try:
        import duckdb
    except ImportError:
        raise _missing_extra("duckdb", "duckdb", "duckdb") from None
    try:
        if src.database is None:
            con = duckdb.connect(":memory:")
        else:
            db = Path(src.database)
            db = db if db.is_absolute() else base_dir / db
            if not db.is_file():
                raise SourceError(
                    f"DuckDB database not found: {db}",
                    key="source.database",
                    hint="check source.database (relative to the mapping file's directory)",
                )
            con = duckdb.connect(str(db), read_only=True)
        # files named in the query are found relative to the mapping file's directory
        search = str(base_dir.resolve()).replace("'", "''")
        con.execute(f"SET file_search_path = '{search}'")
        statements = duckdb_settings(src)
        for statement in statements[:-_OPTIONAL_SETTINGS]:
            con.execute(statement)
        for statement in statements[-_OPTIONAL_SETTINGS:]:
            try:
                con.execute(statement)
            except duckdb.CatalogException:  # a DuckDB without it (older than ours)
                log.debug("DuckDB does not know %r: skipped", statement)
        if spill is not None:
            con.execute("SET temp_directory = '" + spill.replace("'", "''") + "'")
    except duckdb.Error as exc:
        raise SourceError(f"cannot open DuckDB: {exc}", key="source.database") from None
    return con


def duckdb_out_of_memory(src: SourceConfig, what: str, exc: Exception) -> SourceError | None:
    """The error for DuckDB's ``exc`` when ``what`` (the query, the change detection) ran out
    of the source's ``memory_limit``; None for any other error."""
    if "Out of Memory" not in str(exc):
        return None
    return SourceError(
        f"{src.label}: {what} ran out of its working memory ({src.memory_limit}): {exc}",
        key="source.memory_limit",
        hint="raise source.memory_limit (e.g. 256MB); what does not fit spills to disk",
    )


def _duckdb_error(src: SourceConfig, exc: Exception) -> SourceError:
    oom = duckdb_out_of_memory(src, "the DuckDB query", exc)
    if oom is not None:
        return oom
    return SourceError(
        f"{src.label}: the DuckDB query failed: {exc}",
        key="source.query",
        hint="check the query (files are found relative to the mapping file's directory)"
        " and that it returns the key column(s) " + ", ".join(map(repr, src.key or [])),
    )


def _duckdb_columns(src: SourceConfig, base_dir: Path) -> list[str]:
    con = _duckdb_connect(src, base_dir)  # first: it names the extra when duckdb is missing
    import duckdb

    try:
        return list(con.sql(wrapped_query(src, None, limit0=True)).columns)
    except duckdb.Error as exc:
        raise _duckdb_error(src, exc) from None
    finally:
        con.close()


def _unsorted_why_not(con: Any, src: SourceConfig) -> str | None:
    """Why the query's rows cannot be read without ``ORDER BY`` (None: they come in key
    order). Reads the key column(s) alone, in the query's own order, up to the first row
    that goes back."""
    keys = list(src.key or [])
    body = (src.query or "").strip().rstrip(";")
    row = con.execute(
        "SELECT current_setting('preserve_insertion_order'), current_setting('threads'),"
        " current_setting('default_null_order'), current_setting('default_order')"
    ).fetchall()[0]
    if (bool(row[0]), int(row[1])) != (True, 1):
        return "DuckDB may give the rows in another order each time"
    if str(row[2]).lower() != "nulls_last" or str(row[3]).lower() != "ascending":
        return f"DuckDB orders {row[3]} {row[2]}"
    rel = con.sql(f"SELECT * FROM (\n{body}\n) AS q LIMIT 0")
    types = {n: str(t) for n, t in zip(rel.columns, rel.types, strict=True)}
    for k in keys:
        if types.get(k) not in EXACT_TYPES:
            return f"key column {k!r} is {types.get(k)}"
    text = [k for k in keys if types[k] == "VARCHAR"]
    if text:
        probes = " AND ".join(binary_collation_probe(f"q.{quote_ident(k)}") for k in text)
        got = con.execute(
            f"SELECT {probes} FROM (SELECT 1) AS one LEFT JOIN"
            f" (SELECT * FROM (\n{body}\n) AS q LIMIT 0) AS q ON true"
        ).fetchall()
        if got != [(True,)]:
            return "a text key column has a collation"
    check = KeyOrder(keys)
    sql = wrapped_query(src, keys, order=False)
    rel = con.sql(sql)
    reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch)(ORDER_CHECK_ROWS)
    try:
        for batch in reader:
            at = check.first_break(batch)
            if at is not None:
                return f"row {at} comes before the row above it in key order"
    finally:
        reader.close()
    return None


def _checked_order(
    src: SourceConfig, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``batches`` (read without ``ORDER BY``), each checked to keep the key order."""
    check = KeyOrder(src.key or [])
    for batch in batches:
        at = check.first_break(batch)
        if at is not None:
            raise SourceError(
                f"{src.label}: row {at} of the query came out of key order while it was read"
                " without sorting (its rows were in key order just before): the query gave"
                " other rows, or another order, the second time it ran",
                key="source.query",
                hint="run again once the source's files or tables are no longer being written;"
                " a query whose order changes from one run to the next needs ORDER BY"
                " " + ", ".join(src.key or []) + " in it",
            )
        yield batch


def _duckdb_batches(
    src: SourceConfig, base_dir: Path, columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    with tempfile.TemporaryDirectory(prefix="recordsync-duckdb-") as spill:
        con = _duckdb_connect(src, base_dir, spill)
        import duckdb
        try:
            try:
                why_not = _unsorted_why_not(con, src)
                if why_not is None:
                    log.debug("%s: rows already in key order, read without sorting", src.label)
                else:
                    log.debug("%s: rows sorted by key (%s)", src.label, why_not)
                sql = wrapped_query(src, columns, order=why_not is not None)
                batches = duckdb_record_batches(con, sql, None, batch_rows=src.batch_size)
                yield from batches if why_not is not None else _checked_order(src, batches)
            except duckdb.Error as exc:
                raise _duckdb_error(src, exc) from None
        finally:
            con.close()


def duckdb_record_batches(
    con: Any, sql: str, params: Sequence[Any] | None = None, *, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """The rows of ``sql`` (``?`` or ``$1`` bound to ``params``) on the DuckDB connection
    ``con``, as record batches of at most ``batch_rows`` rows in the order the SQL gives them,
    streamed from DuckDB's Arrow reader (DuckDB's errors pass through)."""
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    stream = getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch
    for batch in stream(batch_rows):  # to_arrow_reader: DuckDB 1.4 and later
        if batch.num_rows:
            yield batch


def sql_columns(src: SourceConfig, base_dir: Path) -> list[str]:
    """The query's column names (it is run with ``LIMIT 0``); SourceError when it fails or
    lacks a key column."""
    if src.engine == "postgres":
        from recordsync.read.sql_pg import pg_columns

        names = pg_columns(src)
    else:
        names = _duckdb_columns(src, base_dir)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SourceError(
            f"{src.label}: the query returns duplicate column names: {', '.join(dup)}",
            key="source.query",
            hint="give each column its own name (AS ...)",
        )
    missing = [k for k in src.key or [] if k not in names]
    if missing:
        raise SourceError(
            f"{src.label}: key column(s) {', '.join(map(repr, missing))} not in the query's"
            f" columns ({', '.join(map(repr, names))})",
            key="source.key",
            hint="select the key column(s) in the query, or fix source.key",
        )
    return names


def iter_sql(
    src: SourceConfig, base_dir: Path, columns: list[str] | None = None
) -> Iterator[SourceBatch]:
    """Yield the query's rows in key order, numbered 1, 2, ... (``source_row``)."""
    if columns is not None:  # the key orders the rows: read it too
        columns = list(dict.fromkeys([*columns, *(src.key or [])]))
    if src.engine == "postgres":
        from recordsync.read.sql_pg import pg_batches

        batches = pg_batches(src, columns)
    else:
        batches = _duckdb_batches(src, base_dir, columns)
    label = src.label
    start = 1
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        yield SourceBatch(label, batch, np.arange(start, start + n, dtype=np.int64))
        start += n

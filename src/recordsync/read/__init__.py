"""Sources: CSV and Parquet files (local or on object storage) and SQL queries, streamed in
record batches with bounded memory.

:func:`iter_source` yields :class:`SourceBatch` es (a pyarrow RecordBatch, the line or row
number of each row, and the malformed lines found among them — reported, never dropped).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from recordsync.config.models import SourceConfig
from recordsync.read.batch import BadLine, SourceBatch
from recordsync.read.csv_reader import iter_csv, read_header
from recordsync.read.prefetch import read_ahead


def iter_source(
    source: SourceConfig, base_dir: Path, columns: list[str] | None = None
) -> Iterator[SourceBatch]:
    """Stream ``source`` (path relative to ``base_dir``). ``columns`` may narrow a Parquet
    read; CSV always parses every column (line numbering needs every cell). The next batch
    is read in a background thread while the current one is used (:mod:`.prefetch`). The
    Parquet and SQL readers are imported when used (a CSV run's start-up needs neither)."""
    if source.kind == "sql":
        from recordsync.read.sql import iter_sql

        return read_ahead(iter_sql(source, base_dir, columns))
    if source.kind == "parquet":
        from recordsync.read.parquet_reader import iter_parquet

        return read_ahead(iter_parquet(source, base_dir, columns))
    return read_ahead(iter_csv(source, base_dir))


def source_columns(source: SourceConfig, base_dir: Path) -> list[str]:
    """The column names of a source, without reading its rows."""
    if source.kind == "sql":
        from recordsync.read.sql import sql_columns

        return sql_columns(source, base_dir)
    if source.kind == "parquet":
        from recordsync.read.parquet_reader import parquet_columns

        return parquet_columns(source, base_dir)
    return read_header(source, base_dir)


__all__ = ["BadLine", "SourceBatch", "iter_source", "source_columns"]

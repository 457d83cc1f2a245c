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
from recordsync.read.header_case import fold_header, folds, named
from recordsync.read.integrity import guard_last_line
from recordsync.read.null_values import nulling
from recordsync.read.paths import locate
from recordsync.read.prefetch import read_ahead
from recordsync.tuning.native_memory import configure, give_back


def iter_source(
    source: SourceConfig, base_dir: Path, columns: list[str] | None = None
) -> Iterator[SourceBatch]:
    """Stream ``source`` (path relative to ``base_dir``). ``columns`` may narrow a Parquet
    read; CSV always parses every column (line numbering needs every cell). The next batch
    is read in a background thread while the current one is used (:mod:`.prefetch`); after
    each, that thread gives the memory freed so far back to the system
    (:func:`recordsync.tuning.native_memory.give_back`). The Parquet and SQL readers are imported
    when used (a CSV run's start-up needs neither). A CSV file that ends mid-line has its
    cut last record as a malformed line that stops mirror deletes
    (:func:`recordsync.read.integrity.guard_last_line`). A CSV header with
    ``header_case: insensitive`` gives its names as the mapping spells them
    (:mod:`recordsync.read.header_case`). Cells the source declares ``null_values`` are
    null in every reader's batches (:mod:`recordsync.read.null_values`)."""
    configure()
    batches: Iterator[SourceBatch]
    if source.kind == "sql":
        from recordsync.read.sql import iter_sql

        batches = iter_sql(source, base_dir, columns)
    elif source.kind == "parquet":
        from recordsync.read.parquet_reader import iter_parquet

        batches = iter_parquet(source, base_dir, columns)
    else:
        if folds(source):
            source = named(source, read_header(source, base_dir, quick=True))
        path = locate(base_dir, source.path)  # its last line checked: cut short? (.integrity)
        batches = guard_last_line(source, path, iter_csv(source, base_dir))
    if source.null_values:
        batches = nulling(batches, source.null_values)
    return read_ahead(_giving_back(batches))


def _giving_back(batches: Iterator[SourceBatch]) -> Iterator[SourceBatch]:
    """``batches``, with :func:`give_back` after each is read (the earlier ones freed)."""
    try:
        for sb in batches:
            yield sb
            give_back()
    finally:  # closed with the read-ahead: close the reader too, in this thread
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def source_columns(source: SourceConfig, base_dir: Path) -> list[str]:
    """The column names of a source, without reading its rows (a run's first read of it:
    Arrow's pool and glibc's arenas are set first,
    :func:`recordsync.tuning.native_memory.configure`); a CSV header with
    ``header_case: insensitive`` as the mapping spells its names
    (:mod:`recordsync.read.header_case`)."""
    configure()
    if source.kind == "sql":
        from recordsync.read.sql import sql_columns

        return sql_columns(source, base_dir)
    if source.kind == "parquet":
        from recordsync.read.parquet_reader import parquet_columns

        return parquet_columns(source, base_dir)
    header = read_header(source, base_dir)
    return fold_header(header, source.case_names) if folds(source) else header


__all__ = ["BadLine", "SourceBatch", "iter_source", "source_columns"]

"""A source's ``null_values``: cells that stand for no value (``NULL``, ``N/A``), read as
null in every text column of every batch, whatever the reader (CSV, Parquet, SQL).

A cell matches when, trimmed of surrounding spaces, it is exactly one of the declared
spellings (``NULL`` is not ``null``: declare each spelling the file uses). Such a cell is
then blank everywhere downstream: left out of the record (unless ``empty: "null"``), never
a value that fails a check.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from recordsync.read.batch import SourceBatch


def nulling(batches: Iterator[SourceBatch], tokens: list[str]) -> Iterator[SourceBatch]:
    """``batches`` with the cells equal to one of ``tokens`` (trimmed) made null."""
    values = pa.array(sorted(set(tokens)), pa.string())
    try:
        for sb in batches:
            yield SourceBatch(sb.file, _null_cells(sb.batch, values), sb.rows, sb.bad)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def _null_cells(batch: pa.RecordBatch, values: pa.Array) -> pa.RecordBatch:
    columns = []
    for col in batch.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            hit = pc.is_in(pc.utf8_trim_whitespace(col), value_set=values)
            col = pc.if_else(hit, pa.scalar(None, col.type), col)
        columns.append(col)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)

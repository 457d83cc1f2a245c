"""The header and a sample of a source's values, for ``recordsync init``.

CSV: the delimiter is sniffed from the header line (``,`` ``;`` tab ``|``), the encoding is
UTF-8 (a BOM is skipped) else cp1252. Parquet: typed columns keep their type (a date
column is a date whatever its text looks like).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from recordsync.core.errors import SourceError
from recordsync.infer.values import Shape

SAMPLE_ROWS = 500
_HEAD_BYTES = 1 << 20


@dataclass(slots=True)
class Sample:
    kind: str  # csv | parquet
    header: list[str]
    values: dict[str, list[str]]
    delimiter: str = ","
    encoding: str = "utf-8"
    shapes: dict[str, Shape] = field(default_factory=dict)


def read_sample(path: Path, rows: int = SAMPLE_ROWS) -> Sample:
    """Header and up to ``rows`` rows of ``path`` (a CSV or Parquet file)."""
    if not path.is_file():
        raise SourceError(f"{path}: no such file", hint="give the path of a CSV or Parquet file")
    if path.suffix.lower() in (".parquet", ".pq"):
        return _parquet(path, rows)
    return _csv(path, rows)


def _csv(path: Path, rows: int) -> Sample:
    opener = open
    if path.suffix == ".gz":
        import gzip

        opener = gzip.open  # type: ignore[assignment]
    with opener(path, "rb") as f:
        raw = f.read(_HEAD_BYTES)
    try:
        text, encoding = raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start < len(raw) - 4:  # not a multi-byte character cut by the head's end
            text, encoding = raw.decode("cp1252", errors="replace"), "cp1252"
        else:
            text, encoding = raw[: exc.start].decode("utf-8-sig"), "utf-8"
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t", "|"), key=first.count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise SourceError(
            f"{path}: the file is empty", hint="give a file with a header row"
        ) from None
    values: dict[str, list[str]] = {h: [] for h in header}
    for n, row in enumerate(reader):
        if n >= rows:
            break
        if len(row) != len(header):
            continue  # a malformed line (or the head's cut end) says nothing about columns
        for h, v in zip(header, row, strict=True):
            values[h].append(v)
    return Sample("csv", header, values, delimiter, encoding)


def _parquet(path: Path, rows: int) -> Sample:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    header = list(pf.schema_arrow.names)
    batch = next(pf.iter_batches(batch_size=rows), None)
    values: dict[str, list[str]] = {h: [] for h in header}
    shapes: dict[str, Shape] = {}
    for h in header:
        typ = pf.schema_arrow.field(h).type
        if pa.types.is_date(typ):
            shapes[h] = Shape("date")
        elif pa.types.is_timestamp(typ):
            shapes[h] = Shape("datetime")
        elif pa.types.is_boolean(typ):
            shapes[h] = Shape("boolean")
        elif pa.types.is_integer(typ):
            shapes[h] = Shape("integer")
        elif pa.types.is_floating(typ) or pa.types.is_decimal(typ):
            shapes[h] = Shape("number")
        if batch is not None:
            cells = batch.column(h).to_pylist()
            values[h] = ["" if c is None else str(c) for c in cells]
    return Sample("parquet", header, values, shapes=shapes)

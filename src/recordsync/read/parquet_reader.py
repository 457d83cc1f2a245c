"""Stream Parquet sources (a file, a directory of files, or a glob; local or on object
storage) in record batches."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.batch import SourceBatch
from recordsync.read.paths import is_remote, source_path
from recordsync.read.remote import list_files, open_file, read_range, stat_files

MAGIC = b"PAR1"
"""A Parquet file starts and ends with these bytes (the footer ends with them)."""


def parquet_files(src: SourceConfig, base_dir: Path) -> list[Path | str]:
    """The files a Parquet source names, sorted; SourceError when there are none. Files on
    object storage (:mod:`.remote`) are URIs."""
    if is_remote(src.path):
        listed = list_files(src.path, ".parquet")
        if listed == []:
            raise SourceError(
                f"no Parquet files match {src.path}",
                key="source.path",
                hint="check the prefix or glob pattern",
            )
        return [src.path] if listed is None else list(listed)
    target = source_path(base_dir, src.path)
    if any(ch in src.path for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(str(target), recursive=True))
    elif target.is_dir():
        files = sorted(p for p in target.rglob("*.parquet") if p.is_file())
    elif target.is_file():
        files = [target]
    else:
        raise SourceError(
            f"source not found: {target}",
            key="source.path",
            hint="give a Parquet file, a directory of .parquet files or a glob such as "
            "'exports/*.parquet' (relative to the mapping file's directory)",
        )
    if not files:
        raise SourceError(
            f"no Parquet files match {target}",
            key="source.path",
            hint="check the directory or glob pattern",
        )
    return list(files)


def cut_short(path: Path | str) -> SourceError | None:
    """The error for a file that starts as Parquet but lacks its footer (a file still being
    written, or copied incompletely: the footer is written last), or None."""
    try:
        if isinstance(path, str):
            (stamp,) = stat_files([path])
            size = stamp[0] if stamp is not None else 0
            head, tail = read_range(path, 0, 4), read_range(path, max(0, size - 4), 4)
        else:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(4)
                f.seek(max(0, size - 4))
                tail = f.read(4)
    except (OSError, SourceError):
        return None
    if head != MAGIC or (tail == MAGIC and size >= 12):
        return None
    return SourceError(
        f"{path} is cut short: it has no Parquet footer ({size:,} bytes that do not end with"
        " the footer's 'PAR1'): it is still being written, or was copied incompletely",
        key="source.path",
        hint="run again once the file is complete (have the export write it under another"
        " name and rename it when done); no record of this step was deleted",
    )


def _open(path: Path | str) -> pq.ParquetFile:
    try:
        if isinstance(path, str):
            return pq.ParquetFile(open_file(path))
        return pq.ParquetFile(str(path))
    except (OSError, pa.ArrowException) as exc:
        cut = cut_short(path)
        if cut is not None:
            raise cut from None
        raise SourceError(
            f"cannot read {path} as Parquet: {exc}",
            key="source.format",
            hint="is it a Parquet file? set source.format: csv for text files",
        ) from None


def unique_columns(path: Path | str, names: list[str]) -> list[str]:
    """``names`` (a file's columns); SourceError naming the file and the columns when one
    name is given to two columns (which of them a mapping means cannot be told)."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SourceError(
            f"{path}: duplicate column names: {', '.join(dup)}",
            key="source.path",
            hint="give each column its own name in the file that writes this Parquet",
        )
    return names


def parquet_columns(src: SourceConfig, base_dir: Path) -> list[str]:
    """Column names of the first file (all files must share the columns the mapping uses)."""
    path = parquet_files(src, base_dir)[0]
    return unique_columns(path, list(_open(path).schema_arrow.names))


def iter_parquet(
    src: SourceConfig, base_dir: Path, columns: list[str] | None = None
) -> Iterator[SourceBatch]:
    """Yield batches per file, the files in :func:`parquet_files`' sorted order. Row numbers
    are 1-based and run on across the files (the second file's first row follows the first
    file's last), so each row of the source has a number of its own (the journal and the
    reports name rows by it)."""
    start = 1
    for path in parquet_files(src, base_dir):
        pf = _open(path)
        names = unique_columns(path, pf.schema_arrow.names)
        cols = None if columns is None else [c for c in names if c in set(columns)]
        try:
            for batch in _batches(pf, src.batch_size, cols):
                n = batch.num_rows
                rows = np.arange(start, start + n, dtype=np.int64)
                start += n
                yield SourceBatch(str(path), batch, rows)
        except (OSError, pa.ArrowException) as exc:
            cut = cut_short(path)  # shortened since it was opened
            if cut is not None:
                raise cut from None
            raise SourceError(f"cannot read {path}: {exc}", key="source.path") from None


def _batches(pf: pq.ParquetFile, size: int, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The file's batches, one row group at a time: read over the whole file at once, pyarrow
    reads the next row groups ahead while the first are still consumed, so the peak grew with
    the file (a dry run of 1M rows in one group: 258 MB; 10M rows in ten groups: 486 MB;
    read alone 179 / 408 MB, and 217 MB group by group)."""
    for group in range(pf.num_row_groups):
        yield from pf.iter_batches(batch_size=size, row_groups=[group], columns=columns)

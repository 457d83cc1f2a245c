"""``prepare_step``: read → map → resolve → validate → duplicate keys, one PreparedRow per row.

Two streaming passes when the mapping has ``match_by`` rules or a ``ledger_key``: the first
maps only the key columns and keeps 64-bit hashes of the keys (not the strings) to find
duplicated keys (:mod:`recordsync.prepare.dups`); the second maps everything and yields rows
in source order. Memory is bounded by the batch size plus 16 bytes per row for the hashes.
A contacts or companies step has one more pass, the merge scan
(:mod:`recordsync.prepare.merges`): rows the service would fold into another row's record
come out ``merged``. The source is checked first (:mod:`recordsync.prepare.source_check`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.core.model import Blocks, PreparedRow, RowStatus, Salvage, SourceRow
from recordsync.map.columns import MappedBatch
from recordsync.map.engine import BatchMapper
from recordsync.map.rows import MappedColumns
from recordsync.prepare.dups import (
    ROW_BITS,
    Duplicates,
    ledger_keys,
    shared_hashes,
    text_hashes,
    where,
    winner,
)
from recordsync.prepare.merges import MergeScan, needed, scan_merges
from recordsync.prepare.salvage import bad_row
from recordsync.prepare.source_check import check_batch_columns, check_source
from recordsync.read import BadLine, SourceBatch, iter_source
from recordsync.read.batch import BatchValues
from recordsync.read.integrity import Stamp, changes, stamp_source
from recordsync.read.sql import null_keys
from recordsync.read.swallow import hiding_rows
from recordsync.state.keys import NORMALIZERS, cell_text
from recordsync.tuning import sizes
from recordsync.tuning.gcpause import BatchGC
from recordsync.validate.entry_size import MAX_REQUEST_BYTES, oversized
from recordsync.validate.schema import Schema

__all__ = [  # the duplicate scan's names stay importable from here
    "ROW_BITS",
    "Duplicates",
    "check_batch_columns",
    "check_source",
    "ledger_keys",
    "prepare_step",
    "shared_hashes",
    "text_hashes",
    "where",
    "winner",
]


def _blocks_of(
    sb: SourceBatch,
    mapper: BatchMapper,
    dups: Duplicates | None,
    fidx: int,
    policy: str,
    gcb: BatchGC,
    slice_rows: int | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
    merges: MergeScan | None = None,
) -> Iterator[list[PreparedRow]]:
    """The batch's prepared rows, a list per slice of ``slice_rows`` rows (the stages after
    this one pass lists on: no generator hop per row)."""
    # rows whose multi-line cell may hide rows stop the step's mirror deletes (their
    # ``salvage.hides``, :mod:`recordsync.read.swallow`)
    src = mapper.mapping.source
    mirror = mapper.mapping.mirror_deletes.enabled
    hiding = hiding_rows(sb.batch, sb.rows, src.delimiter) if mirror and src.kind == "csv" else {}
    size = slice_rows or len(sb.rows)
    # sliced: the batch is mapped column by column a window of several slices at a time
    # (``sizes.MAP_ROWS``), each slice building its own rows from its window's columns
    window = max(size, sizes.MAP_ROWS)
    columns: MappedColumns | None = None
    start = at = 0  # the slice's first row; the window's
    for part in _slices(sb, size):
        stop = start + len(part.rows)
        with gcb.building():
            if len(part.rows) < len(sb.rows) and (columns is None or stop > at + len(columns)):
                at = start
                columns = mapper.map_columns(sb.batch.slice(at, window))
            mapped = columns.rows(start - at, stop - at) if columns is not None else None
            rows = _build_rows(
                part, mapper, dups, fidx, policy, max_request_bytes, merges, mapped
            )
        start = stop
        for r in rows if hiding else ():
            why = hiding.get(r.source.source_row)
            if why is not None and r.salvage is None:
                r.salvage = Salvage([], [], why)
        yield rows


def ramp(rows: int) -> list[int]:
    """The sizes of the leading parts a sending run cuts its first read batch of ``rows`` rows
    into: ``sizes.FIRST_SLICE_ROWS``, then twice as many each time, while a part is smaller
    than a slice (``sizes.SLICE_ROWS``) and more than twice its size is left. The first chunk
    waits for the first part only, and each part is prepared while the chunks of the one
    before are in flight (the rest of the batch then goes as usual, a slice at a time)."""
    out: list[int] = []
    size, left = sizes.FIRST_SLICE_ROWS, rows
    while 0 < size < sizes.SLICE_ROWS and left > 2 * size:
        out.append(size)
        left -= size
        size *= 2
    return out


def head_first(batches: Iterator[SourceBatch]) -> Iterator[SourceBatch]:
    """``batches``, the first one cut into the parts of :func:`ramp`, then its rest: a sending
    run's first chunk waits for the first part only, not for the first slice's window to be
    mapped. The same rows, in the same order."""
    for i, sb in enumerate(batches):
        if i:
            yield sb
            continue
        for size in ramp(len(sb.rows)):
            head, sb = sb.split(size)
            yield head
        yield sb


def _slices(sb: SourceBatch, size: int) -> Iterator[SourceBatch]:
    """``sb`` in slices of ``size`` rows (no copy); each malformed line goes with the slice
    whose rows it falls among (before the next slice's first row), as in one batch."""
    n = len(sb.rows)
    if n <= size or size < 1:
        yield sb
        return
    bad, b = sb.bad, 0
    for start in range(0, n, size):
        end = min(start + size, n)
        mine: list[BadLine] = []
        limit = int(sb.rows[end]) if end < n else None
        while b < len(bad) and (limit is None or bad[b].line < limit):
            mine.append(bad[b])
            b += 1
        yield SourceBatch(sb.file, sb.batch.slice(start, end - start), sb.rows[start:end], mine)


def _duplicate_error(
    mapping: MappingConfig, key: str | None, values: dict[str, Any] | None, others: str, policy: str
) -> str:
    """Why a row is not sent: its (ledger) key is also on ``others`` (the winner, or with
    ``fail`` every other row of the group)."""
    spec = mapping.ledger_key
    lk = None
    if spec is not None and values is not None:
        text = cell_text(values.get(spec.column))
        lk = NORMALIZERS[spec.normalize](text) if text is not None else None
    what = f"ledger key {lk!r} (column '{spec.column}')" if spec and lk else f"key {key}"
    if policy == "fail":
        return f"duplicate {what}: also on {others} (duplicates: fail)"
    return f"duplicate {what}: {others} has the same key and wins (duplicates: {policy})"


def _build_rows(
    sb: SourceBatch,
    mapper: BatchMapper,
    dups: Duplicates | None,
    fidx: int,
    policy: str,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
    merges: MergeScan | None = None,
    mapped: MappedBatch | None = None,
) -> list[PreparedRow]:
    """``sb``'s prepared rows; ``mapped``: its rows as mapped already (else mapped here)."""
    columns = sb.batch.schema.names
    mb = mapped if mapped is not None else mapper.map_batch(sb.batch)
    too_large = oversized(sb.batch, mb.payloads, max_request_bytes)
    if too_large:  # fails alone, as invalid (validate/entry_size.py)
        mb.errors = [too_large.get(i, e) if e is None else e for i, e in enumerate(mb.errors)]
    if mapper.mapping.source.query is not None:  # a query row without its key is invalid
        no_key = null_keys(sb.batch, mapper.mapping.source)
        mb.errors = [no_key.get(i, e) if e is None else e for i, e in enumerate(mb.errors)]
    rows = sb.rows.tolist()
    origin = BatchValues(sb.batch, sb.rows)
    dup_of: dict[int, str] = {}
    if dups is not None and dups.groups:
        for i, group in dups.groups_of((np.int64(fidx) << ROW_BITS) | sb.rows):
            me = (fidx << ROW_BITS) | rows[i]
            keep = winner(group, policy)
            if keep == me:
                continue
            values = origin.values_of(rows[i]) if dups.by_ledger_key(group) else None
            if policy == "fail":
                others = ", ".join(dups.where(g, fidx) for g in group if g != me)
            else:
                assert keep is not None
                others = dups.where(keep, fidx)
            dup_of[i] = _duplicate_error(mapper.mapping, mb.keys[i], values, others, policy)
    merged_of: dict[int, str] = {}
    if merges is not None and merges.hits:
        for i in merges.held((np.int64(fidx) << ROW_BITS) | sb.rows):
            if i not in dup_of and mb.errors[i] is None:
                rid = (fidx << ROW_BITS) | rows[i]
                merged_of[i] = merges.error(rid, fidx, mb.payloads[i])
    # the original values: made per row only when asked for (failing rows, a few readers)
    valid, invalid, duplicate = RowStatus.VALID, RowStatus.INVALID, RowStatus.DUPLICATE
    errors = mb.errors
    hints = mb.hints
    owners = mb.owners or [None] * len(rows)
    file = sb.file
    bad = sb.bad
    # the common case: built column-wise (map calls in C)
    if not bad and not dup_of and not merged_of:
        n = len(rows)
        sources = map(SourceRow, repeat(file, n), rows, repeat(None, n), repeat(origin, n))
        statuses = [valid if err is None else invalid for err in errors]
        suggestions: list[dict[str, Any]] = [{} for _ in rows]
        for i, hint in hints.items():
            if hint and 0 <= i < n:
                suggestions[i] = hint
        lists = (mb.payloads, mb.match_by, mb.match_value, mb.keys, errors, owners, suggestions)
        for col in lists:
            if len(col) != n:
                raise ValueError(f"mapped batch column of {len(col)} rows, expected {n}")
        return list(map(PreparedRow, sources, statuses, *lists))
    out: list[PreparedRow] = []
    b = 0
    for i, line in enumerate(rows):
        while b < len(bad) and bad[b].line < line:
            out.append(bad_row(bad[b], file, columns, mapper))
            b += 1
        error = errors[i]
        if i in dup_of:
            status, error = duplicate, dup_of[i]
        elif i in merged_of:
            status, error = RowStatus.MERGED, merged_of[i]
        else:
            status = valid if error is None else invalid
        out.append(
            PreparedRow(
                SourceRow(file, line, None, origin),
                status,
                mb.payloads[i],
                mb.match_by[i],
                mb.match_value[i],
                mb.keys[i],
                error,
                owners[i],
                hints.get(i) or {},
            )
        )
    out.extend(bad_row(bl, file, columns, mapper) for bl in bad[b:])
    return out


def prepare_step(
    mapping: MappingConfig,
    *,
    base_dir: Path,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    slice_rows: int | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> Blocks[PreparedRow]:
    """Yield one PreparedRow per source row, in source order (VALID, INVALID, DUPLICATE,
    MERGED: predicted to fold into another row's record, :mod:`recordsync.prepare.merges`).

    Config errors (unknown object type or field, unreadable owners file, missing source) are
    raised here, before the first row. With ``schema=None`` only offline checks run.
    ``slice_rows``: prepare read batches in slices of that many rows (``sizes.SLICE_ROWS``).
    A row too large for a request of ``max_request_bytes`` is invalid (validate/entry_size).
    The rows are made a slice at a time: :class:`Blocks` (their lists are in ``.lists``).
    """
    check_source(mapping, base_dir)
    mapper = BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users)
    keyed = bool(mapping.match_by) or mapping.ledger_key is not None
    scanned = (  # the files as the first pass finds them, when a scan reads them first
        stamp_source(mapping.source, base_dir) if keyed or needed(mapping) is not None else None
    )
    dups = Duplicates.scan(mapper, mapping, base_dir) if keyed else None
    merges = scan_merges(mapping, base_dir=base_dir, schema=schema, users=users, dups=dups)
    return Blocks(
        _stream(mapping, base_dir, mapper, dups, slice_rows, max_request_bytes, merges, scanned),
        dups.ledger_keys if dups is not None else None,
    )


def _same_files(
    mapping: MappingConfig, base_dir: Path, before: dict[str, Stamp], when: str
) -> None:
    """Raise a SourceError if a file of the source changed (size or modification time) since
    ``before`` was taken, at the start of the first pass: the scans' findings name rows by
    their place in the file, and would be taken for other rows."""
    found = changes(before, stamp_source(mapping.source, base_dir))
    if found:
        raise SourceError(
            f"{mapping.source.label} changed {when}: {'; '.join(found)}. The duplicate and"
            " merge scans of the first pass name rows by their place in it, and would be"
            " taken for other rows",
            file=mapping.label,
            key="source.path",
            hint="run again once the export is complete (a file still being written, or"
            " replaced while recordsync read it)",
        )


def _stream(
    mapping: MappingConfig,
    base_dir: Path,
    mapper: BatchMapper,
    dups: Duplicates | None,
    slice_rows: int | None,
    max_request_bytes: int | None,
    merges: MergeScan | None = None,
    scanned: dict[str, Stamp] | None = None,
) -> Iterator[list[PreparedRow]]:
    """The rows pass. ``scanned``: the source's files as they were when the scans began
    (None: no scan ran); a file changed since stops the step before its first row, and one
    changed while its rows were read stops it once they all were (with a SourceError)."""
    if scanned is not None:
        _same_files(mapping, base_dir, scanned, "between the first pass and the read of its rows")
    files: dict[str, int] = {}
    gcb = BatchGC()
    batches = iter_source(mapping.source, base_dir)
    try:
        for sb in head_first(batches) if slice_rows else batches:
            fidx = files.setdefault(sb.file, len(files))
            check_batch_columns(sb, mapper, mapping)
            policy = mapping.duplicates
            yield from _blocks_of(
                sb, mapper, dups, fidx, policy, gcb, slice_rows, max_request_bytes, merges
            )
    finally:
        gcb.release()
    if scanned is not None:
        _same_files(mapping, base_dir, scanned, "while its rows were read")

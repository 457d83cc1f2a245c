"""``prepare_step``: read → map → resolve → validate → duplicate keys, one PreparedRow per row.

Two streaming passes when the mapping has ``match_by`` rules: the first maps only the key
columns and keeps 64-bit hashes of the keys (not the strings) to find duplicated keys; the
second maps everything and yields rows in source order. Memory is bounded by the batch size
plus 16 bytes per row for the hashes.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recordsync.config.loader import mapping_line
from recordsync.config.models import MappingConfig
from recordsync.errors import ConfigError, SourceError
from recordsync.map.engine import BatchMapper
from recordsync.map.gcpause import BatchGC, gc_paused
from recordsync.model import PreparedRow, RowStatus, SourceRow
from recordsync.read import BadLine, SourceBatch, iter_source, source_columns
from recordsync.read.batch import BatchValues
from recordsync.read.paths import check_source_file, source_path
from recordsync.validate.entry_size import MAX_REQUEST_BYTES, oversized
from recordsync.validate.schema import Schema

ROW_BITS = 40  # row identity = file index << 40 | row number


class Duplicates:
    """Rows sharing a key hash: hash → row identities in source order."""

    def __init__(self, groups: dict[int, list[int]], files: list[str] | None = None) -> None:
        self.groups = groups
        self.files = files or []
        self._members: tuple[npt.NDArray[np.int64], list[list[int]]] | None = None

    def where(self, rid: int, fidx: int) -> str:
        """'row N', plus the file's name when it is another file of the source."""
        row = f"row {rid & ((1 << ROW_BITS) - 1)}"
        other = rid >> ROW_BITS
        if other != fidx and other < len(self.files):
            return f"{row} of {Path(self.files[other]).name}"
        return row

    def groups_of(self, ids: npt.NDArray[np.int64]) -> Iterator[tuple[int, list[int]]]:
        """``(i, group)`` for each row identity ``ids[i]`` that is in a group, found by its
        identity (the first pass already hashed its key: the second pass does not again)."""
        if self._members is None:  # every grouped identity, sorted, and its group
            pairs = sorted((rid, g) for g in self.groups.values() for rid in g)
            members = np.fromiter((rid for rid, _ in pairs), np.int64, len(pairs))
            self._members = (members, [g for _, g in pairs])
        members, owners = self._members
        if not len(members) or not len(ids):
            return
        at = np.minimum(np.searchsorted(members, ids), len(members) - 1)
        hit = members[at] == ids
        for i, k in zip(np.flatnonzero(hit).tolist(), at[hit].tolist(), strict=True):
            yield i, owners[k]

    @classmethod
    def scan(cls, mapper: BatchMapper, mapping: MappingConfig, base_dir: Path) -> Duplicates:
        files: dict[str, int] = {}
        hashes: list[npt.NDArray[np.int64]] = []
        ids: list[npt.NDArray[np.int64]] = []
        for sb in iter_source(mapping.source, base_dir, mapping.key_columns()):
            fidx = files.setdefault(sb.file, len(files))
            with gc_paused():
                h, has = mapper.key_hashes(sb.batch)
            hashes.append(h[has])
            ids.append((np.int64(fidx) << ROW_BITS) | sb.rows[has])
        return cls(shared_hashes(hashes, ids), list(files))


def shared_hashes(
    hashes: list[npt.NDArray[np.int64]], ids: list[npt.NDArray[np.int64]]
) -> dict[int, list[int]]:
    """hash → row identities, in source order, of every hash that two rows or more share."""
    if not hashes:
        return {}
    h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
    order = np.lexsort((id_all, h_all))
    hs = h_all[order]
    dup = np.zeros(len(hs), dtype=bool)
    same = hs[1:] == hs[:-1]
    dup[1:] |= same
    dup[:-1] |= same
    groups: dict[int, list[int]] = {}
    for hv, rid in zip(hs[dup].tolist(), id_all[order][dup].tolist(), strict=True):
        groups.setdefault(hv, []).append(rid)
    return groups


def _bad_row(bl: BadLine, file: str, columns: list[str]) -> PreparedRow:
    cells = next(csv.reader([bl.text]), []) if bl.text else []
    values: dict[str, Any] = dict(zip(columns, cells, strict=False))
    if len(cells) > len(columns):
        values["_extra_cells"] = cells[len(columns) :]
    return PreparedRow(
        source=SourceRow(file, bl.line, values),
        status=RowStatus.INVALID,
        error=f"line {bl.line}: {bl.message}",
    )


SLICE_ROWS = 2048
"""Rows mapped and validated at a time when a run sends (``slice_rows``): a read batch is
then prepared in slices, so that the run's main thread returns to its chunks (acknowledging,
reporting, queueing the next) between slices instead of leaving the service waiting for a
whole batch. A dry run prepares whole batches: slices cost about 25% of its speed."""


def _rows_of(
    sb: SourceBatch,
    mapper: BatchMapper,
    dups: Duplicates | None,
    fidx: int,
    policy: str,
    gcb: BatchGC,
    slice_rows: int | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> Iterator[PreparedRow]:
    for part in _slices(sb, slice_rows or len(sb.rows)):
        with gcb.building():
            rows = _build_rows(part, mapper, dups, fidx, policy, max_request_bytes)
        yield from rows


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


def _build_rows(
    sb: SourceBatch,
    mapper: BatchMapper,
    dups: Duplicates | None,
    fidx: int,
    policy: str,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> list[PreparedRow]:
    columns = sb.batch.schema.names
    mb = mapper.map_batch(sb.batch)
    too_large = oversized(sb.batch, mb.payloads, max_request_bytes)
    if too_large:  # fails alone, as invalid (validate/entry_size.py)
        mb.errors = [too_large.get(i, e) if e is None else e for i, e in enumerate(mb.errors)]
    rows = sb.rows.tolist()
    dup_of: dict[int, str] = {}
    if dups is not None and dups.groups:
        for i, group in dups.groups_of((np.int64(fidx) << ROW_BITS) | sb.rows):
            if mb.keys[i] is None:  # cannot be: the first pass found its key
                continue
            me = (fidx << ROW_BITS) | rows[i]
            if policy == "fail":
                others = ", ".join(dups.where(g, fidx) for g in group if g != me)
                dup_of[i] = f"duplicate key {mb.keys[i]}: also on {others} (duplicates: fail)"
            elif group[-1] != me:
                dup_of[i] = (
                    f"duplicate key {mb.keys[i]}: {dups.where(group[-1], fidx)}"
                    " has the same key and wins (duplicates: last)"
                )
    # the original values: made per row only when asked for (failing rows, a few readers)
    origin = BatchValues(sb.batch, sb.rows)
    valid, invalid, duplicate = RowStatus.VALID, RowStatus.INVALID, RowStatus.DUPLICATE
    errors = mb.errors
    hints = mb.hints
    owners = mb.owners or [None] * len(rows)
    file = sb.file
    bad = sb.bad
    if not bad and not dup_of:  # the common case: built column-wise (map calls in C)
        n = len(rows)
        sources = map(SourceRow, repeat(file, n), rows, repeat(None, n), repeat(origin, n))
        statuses = [valid if err is None else invalid for err in errors]
        suggestions = [hints.get(i) or {} for i in range(n)] if hints else [{} for _ in rows]
        lists = (mb.payloads, mb.match_by, mb.match_value, mb.keys, errors, owners, suggestions)
        for col in lists:
            if len(col) != n:
                raise ValueError(f"mapped batch column of {len(col)} rows, expected {n}")
        return list(map(PreparedRow, sources, statuses, *lists))
    out: list[PreparedRow] = []
    b = 0
    for i, line in enumerate(rows):
        while b < len(bad) and bad[b].line < line:
            out.append(_bad_row(bad[b], file, columns))
            b += 1
        error = errors[i]
        if i in dup_of:
            status, error = duplicate, dup_of[i]
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
    out.extend(_bad_row(bl, file, columns) for bl in bad[b:])
    return out


def _near_miss(column: str, header: list[str]) -> str | None:
    """``column 'X' not found; the header has 'X ' (trailing space)`` when a header name
    equals ``column`` up to surrounding spaces and case, else None."""
    key = column.strip().casefold()
    for h in header:
        if h.strip().casefold() != key:
            continue
        how = []
        if h.rstrip() != h and column.rstrip() == column:
            how.append("trailing space")
        if h.lstrip() != h and column.lstrip() == column:
            how.append("leading space")
        if h.strip() != column.strip() and h.strip().casefold() == column.strip().casefold():
            how.append("different case")
        why = f" ({', '.join(how)})" if how else ""
        return f"column {column!r} not found; the header has {h!r}{why}"
    return None


def check_source(mapping: MappingConfig, base_dir: Path) -> list[str]:
    """The source's columns, after checking it opens and has every column the mapping uses."""
    try:
        if mapping.source.kind == "csv":
            check_source_file(source_path(base_dir, mapping.source.path), mapping.source.encoding)
        have = source_columns(mapping.source, base_dir)
    except ConfigError as exc:
        where = f"{exc.file}:{exc.line}" if exc.line is not None else exc.file
        raw = exc.detail if where is None else f"{where}: {exc.detail}"
        raise type(exc)(
            raw,
            file=mapping.label,
            line=mapping_line(mapping, "source", "path"),
            key=exc.key or "source.path",
            hint=exc.hint,
        ) from None
    missing = [c for c in mapping.source_columns() if c not in have]
    if missing:
        msg = f"column(s) not in the source's header: {', '.join(map(repr, missing))}"
        near = [n for n in (_near_miss(c, have) for c in missing) if n]
        if near:  # a header that differs only in spaces or case: say so first, never match it
            fix = "write the column exactly as in the header, or fix the header"
            msg = f"{'; '.join(near)}: {fix}" + ("" if len(near) == len(missing) else f"; {msg}")
        raise ConfigError(
            msg,
            file=mapping.label,
            line=mapping_line(mapping, "fields"),
            key="columns",
            hint=f"columns of {mapping.source.path}: {', '.join(map(repr, have))}",
        )
    return have


def prepare_step(
    mapping: MappingConfig,
    *,
    base_dir: Path,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    slice_rows: int | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> Iterator[PreparedRow]:
    """Yield one PreparedRow per source row, in source order (VALID, INVALID, DUPLICATE).

    Config errors (unknown object type or field, unreadable owners file, missing source) are
    raised here, before the first row. With ``schema=None`` only offline checks run.
    ``slice_rows``: prepare read batches in slices of that many rows (:data:`SLICE_ROWS`).
    A row too large for a request of ``max_request_bytes`` is invalid (validate/entry_size).
    """
    check_source(mapping, base_dir)
    mapper = BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users)
    dups = Duplicates.scan(mapper, mapping, base_dir) if mapping.match_by else None
    return _stream(mapping, base_dir, mapper, dups, slice_rows, max_request_bytes)


def check_batch_columns(sb: SourceBatch, mapper: BatchMapper, mapping: MappingConfig) -> None:
    """A file of a directory or glob source must have every column the mapping uses."""
    missing = [c for c in mapper.columns_used if c not in sb.batch.schema.names]
    if missing and sb.batch.num_columns:
        raise SourceError(
            f"{sb.file} lacks column(s) {', '.join(map(repr, missing))} that the mapping uses",
            file=mapping.label,
            key="source.path",
            hint="every file of a directory or glob source needs the mapped columns",
        )


def _stream(
    mapping: MappingConfig,
    base_dir: Path,
    mapper: BatchMapper,
    dups: Duplicates | None,
    slice_rows: int | None,
    max_request_bytes: int | None,
) -> Iterator[PreparedRow]:
    files: dict[str, int] = {}
    gcb = BatchGC()
    try:
        for sb in iter_source(mapping.source, base_dir):
            fidx = files.setdefault(sb.file, len(files))
            check_batch_columns(sb, mapper, mapping)
            policy = mapping.duplicates
            yield from _rows_of(sb, mapper, dups, fidx, policy, gcb, slice_rows, max_request_bytes)
    finally:
        gcb.release()

"""``prepare_digested``: :func:`recordsync.prepare.prepare_step` for a run that keeps source-row
digests (:mod:`recordsync.state.digests`): rows whose digest is in the last run's snapshot
come out as :class:`UnchangedBlock` s without being mapped; every other row is prepared as
usual and carries its digest (for the next snapshot).

Two passes, as in ``prepare_step``. The first digests every row, matches the digests against
the snapshot and finds duplicate keys: for rows the snapshot knows, their keys come from the
snapshot; for the others from the mapping's key columns. A snapshot row whose key another
row of the source also has (a duplicate, or the same ledger key) is *demoted*: it is
prepared in full, so that the duplicate rules see it. The second pass maps only the rows
that are not found unchanged. Memory: 25 bytes a row (digest, snapshot row, flag) plus the
16 bytes a row of the duplicate scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recordsync.config.models import MappingConfig
from recordsync.errors import SourceError
from recordsync.map.engine import BatchMapper
from recordsync.map.gcpause import BatchGC, gc_paused
from recordsync.model import PreparedRow, UnchangedBlock
from recordsync.prepare import ROW_BITS, Duplicates, _rows_of, check_source
from recordsync.read import SourceBatch, iter_source
from recordsync.state.digests import row_digests, supported
from recordsync.state.keys import NORMALIZERS, cell_text
from recordsync.state.snapshots import Snapshot
from recordsync.validate.schema import Schema

Item = PreparedRow | UnchangedBlock


@dataclass(slots=True)
class _Seen:
    """What the first pass learnt about one batch."""

    file: str
    rows: int
    digests: npt.NDArray[np.uint64] | None
    ok: npt.NDArray[np.bool_] | None
    found: npt.NDArray[np.int64]
    """Snapshot row per batch row, -1 where none (or demoted)."""


def _key_hashes(keys: list[str | None]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    has = np.fromiter((k is not None for k in keys), bool, len(keys))
    present = [k for k in keys if k is not None]
    return np.fromiter(map(hash, present), dtype=np.int64, count=len(present)), has


def _groups(
    hashes: list[npt.NDArray[np.int64]], ids: list[npt.NDArray[np.int64]]
) -> dict[int, list[int]]:
    """hash → row ids (source order) for every hash shared by two rows or more."""
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


def _ledger_keys(
    mapping: MappingConfig, sb: SourceBatch, keys: list[str | None]
) -> list[str | None]:
    """The rows' keys after a declared ``ledger_key`` (blank: the match key stays)."""
    spec = mapping.ledger_key
    if spec is None:
        return keys
    norm = NORMALIZERS[spec.normalize]
    out = list(keys)
    for i, v in enumerate(sb.batch.column(spec.column).to_pylist()):
        text = cell_text(v)
        k = norm(text) if text is not None else None
        if k is not None:
            out[i] = k
    return out


class _Scan:
    """The first pass."""

    def __init__(
        self,
        mapper: BatchMapper,
        mapping: MappingConfig,
        base_dir: Path,
        snapshot: Snapshot | None,
        fp: bytes,
    ) -> None:
        self.seen: list[_Seen] = []
        files: dict[str, int] = {}
        match_h: list[npt.NDArray[np.int64]] = []
        match_ids: list[npt.NDArray[np.int64]] = []
        final_h: list[npt.NDArray[np.int64]] = []
        final_ids: list[npt.NDArray[np.int64]] = []
        fast_ids: list[npt.NDArray[np.int64]] = []
        columns = mapper.columns_used
        for sb in iter_source(mapping.source, base_dir):
            fidx = files.setdefault(sb.file, len(files))
            n = sb.batch.num_rows
            got = (
                row_digests(sb.batch, columns, fp) if supported(sb.batch.schema, columns) else None
            )
            digests, ok = got if got is not None else (None, None)
            found = np.full(n, -1, dtype=np.int64)
            if snapshot is not None and digests is not None and ok is not None and not sb.bad:
                found = snapshot.match(digests, ok)
            self.seen.append(_Seen(sb.file, n, digests, ok, found))
            ids = (np.int64(fidx) << ROW_BITS) | sb.rows
            fast = found >= 0
            fast_ids.append(ids[fast])
            if not mapping.match_by and mapping.ledger_key is None:
                continue
            with gc_paused():
                keys, final = self._keys(mapper, mapping, sb, found, fast, snapshot)
            if mapping.match_by:
                h, has = _key_hashes(keys)
                match_h.append(h)
                match_ids.append(ids[has])
            if mapping.ledger_key is not None:
                h, has = _key_hashes(final)
                final_h.append(h)
                final_ids.append(ids[has])
        self.files = list(files)
        groups = _groups(match_h, match_ids)
        self.dups = Duplicates(groups, self.files) if mapping.match_by else None
        clashing = [g for g in groups.values()]
        clashing += _groups(final_h, final_ids).values()
        self.demoted = np.array(sorted({rid for g in clashing for rid in g}), dtype=np.int64)
        self.fast_rows = int(sum(len(a) for a in fast_ids))

    @staticmethod
    def _keys(
        mapper: BatchMapper,
        mapping: MappingConfig,
        sb: SourceBatch,
        found: npt.NDArray[np.int64],
        fast: npt.NDArray[np.bool_],
        snapshot: Snapshot | None,
    ) -> tuple[list[str | None], list[str | None]]:
        """Match keys and final (ledger) keys of every row of the batch."""
        n = sb.batch.num_rows
        keys: list[str | None] = [None] * n
        final: list[str | None] = [None] * n
        slow = np.flatnonzero(~fast)
        if len(slow) == n:
            keys = mapper.keys_only(sb.batch) if mapping.match_by else keys
            return keys, _ledger_keys(mapping, sb, keys)
        if len(slow):
            import pyarrow as pa

            sub = SourceBatch(sb.file, sb.batch.take(pa.array(slow)), sb.rows[slow], [])
            sub_keys: list[str | None] = (
                mapper.keys_only(sub.batch) if mapping.match_by else [None] * len(slow)
            )
            sub_final = _ledger_keys(mapping, sub, sub_keys)
            for i, k, f in zip(slow.tolist(), sub_keys, sub_final, strict=True):
                keys[i], final[i] = k, f
        assert snapshot is not None
        pos = np.flatnonzero(fast)
        at = found[fast]
        bys = snapshot.column("match_by", at)
        mvs = snapshot.column("match_value", at)
        finals = snapshot.column("key", at)
        for i, by, mv, f in zip(pos.tolist(), bys, mvs, finals, strict=True):
            keys[i] = f"{by}:{mv}" if by is not None and mv is not None else None
            final[i] = f
        return keys, final


def prepare_digested(
    mapping: MappingConfig,
    *,
    base_dir: Path,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    snapshot: Snapshot | None,
    fp: bytes,
) -> Iterator[Item]:
    """Yield, in source order, PreparedRows (with ``digest`` set where the row has one) and
    UnchangedBlocks of rows found in ``snapshot``. Config errors are raised before the
    first row, as in ``prepare_step``."""
    check_source(mapping, base_dir)
    mapper = BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users)
    scan = _Scan(mapper, mapping, base_dir, snapshot, fp)
    return _stream(mapping, base_dir, mapper, scan, snapshot)


def _with_digests(
    rows: list[PreparedRow], seen: _Seen, positions: npt.NDArray[np.int64], line_of: list[int]
) -> list[PreparedRow]:
    """Set ``digest`` on the prepared rows of batch rows ``positions`` (bad lines among them
    have none)."""
    d, ok = seen.digests, seen.ok
    if d is None or ok is None:
        return rows
    j = 0
    pos = positions.tolist()
    for r in rows:
        if j < len(pos) and r.source.source_row == line_of[pos[j]]:
            i = pos[j]
            j += 1
            if ok[i]:
                r.digest = (int(d[i, 0]), int(d[i, 1]))
    return rows


def _stream(
    mapping: MappingConfig,
    base_dir: Path,
    mapper: BatchMapper,
    scan: _Scan,
    snapshot: Snapshot | None,
) -> Iterator[Item]:
    import pyarrow as pa

    files: dict[str, int] = {}
    gcb = BatchGC()
    policy = mapping.duplicates
    dups = scan.dups
    b = 0
    try:
        for sb in iter_source(mapping.source, base_dir):
            if (
                b >= len(scan.seen)
                or scan.seen[b].file != sb.file
                or scan.seen[b].rows != sb.batch.num_rows
            ):
                raise SourceError(
                    f"{sb.file} changed while it was being read (its rows differ between the"
                    " two passes over it)",
                    file=mapping.label,
                    key="source.path",
                    hint="run again once the export is complete",
                )
            seen = scan.seen[b]
            b += 1
            fidx = files.setdefault(sb.file, len(files))
            missing = [c for c in mapper.columns_used if c not in sb.batch.schema.names]
            if missing and sb.batch.num_columns:
                raise SourceError(
                    f"{sb.file} lacks column(s) {', '.join(map(repr, missing))} "
                    "that the mapping uses",
                    file=mapping.label,
                    key="source.path",
                    hint="every file of a directory or glob source needs the mapped columns",
                )
            n = sb.batch.num_rows
            found = seen.found
            fast = found >= 0
            if fast.any() and len(scan.demoted):
                ids = (np.int64(fidx) << ROW_BITS) | sb.rows
                fast &= ~np.isin(ids, scan.demoted)
            line_of = sb.rows.tolist()
            if not fast.any() or snapshot is None:
                rows = _rows_of(sb, mapper, dups, fidx, policy, gcb)
                yield from _with_digests(rows, seen, np.arange(n, dtype=np.int64), line_of)
                continue
            slow = np.flatnonzero(~fast)
            slow_rows: list[PreparedRow] = []
            if len(slow):
                sub = SourceBatch(sb.file, sb.batch.take(pa.array(slow)), sb.rows[slow], [])
                slow_rows = _with_digests(
                    _rows_of(sub, mapper, dups, fidx, policy, gcb), seen, slow, line_of
                )
            yield from _interleave(sb.file, fast, found, line_of, slow_rows, snapshot)
    finally:
        gcb.release()


def _interleave(
    file: str,
    fast: npt.NDArray[np.bool_],
    found: npt.NDArray[np.int64],
    line_of: list[int],
    slow_rows: list[PreparedRow],
    snapshot: Snapshot,
) -> Iterator[Item]:
    """The batch's rows in order: runs of fast rows as blocks, the others one by one."""
    at = found[fast]
    keys = snapshot.column("key", at)
    bys = snapshot.column("match_by", at)
    mvs = snapshot.column("match_value", at)
    rids = snapshot.column("record_id", at)
    # boundaries of the runs of equal ``fast``
    edges = np.flatnonzero(np.diff(fast.astype(np.int8))) + 1
    starts = [0, *edges.tolist()]
    ends = [*edges.tolist(), len(fast)]
    k = 0  # next fast row (index into at/keys/...)
    s = 0  # next slow row
    for a, z in zip(starts, ends, strict=True):
        if fast[a]:
            m = z - a
            yield UnchangedBlock(
                file,
                line_of[a:z],
                at[k : k + m],
                keys[k : k + m],
                bys[k : k + m],
                mvs[k : k + m],
                rids[k : k + m],
            )
            k += m
        else:
            yield from slow_rows[s : s + (z - a)]
            s += z - a

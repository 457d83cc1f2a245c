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
from dataclasses import dataclass, field
from itertools import compress
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.config.models import MappingConfig
from recordsync.errors import SourceError
from recordsync.map.engine import BatchMapper
from recordsync.map.gcpause import BatchGC, gc_paused
from recordsync.model import Blocks, PreparedRow, UnchangedBlock
from recordsync.prepare.core import (
    ROW_BITS,
    Duplicates,
    _blocks_of,
    check_batch_columns,
    check_source,
    ledger_keys,
    shared_hashes,
)
from recordsync.prepare.dups import HashRuns
from recordsync.prepare.merges import MergeScan, Owned, scan_merges
from recordsync.prepare.salvage import bad_row
from recordsync.read import BadLine, SourceBatch, iter_source
from recordsync.read.swallow import hiding_rows
from recordsync.state.digests import row_digests, supported
from recordsync.state.snapshot_match import key_hashes
from recordsync.state.snapshots import Snapshot
from recordsync.validate.entry_size import MAX_REQUEST_BYTES
from recordsync.validate.schema import Schema

Item = PreparedRow | UnchangedBlock


KEEP_ROWS = 100_000
"""Rows not found in the snapshot that the first pass keeps (as Arrow sub-batches) so that
the second pass need not read the source again; above this, it reads it again."""


@dataclass(slots=True)
class _Seen:
    """What the first pass learnt about one batch."""

    file: str
    rows: npt.NDArray[np.int64]
    digests: npt.NDArray[np.uint64] | None
    ok: npt.NDArray[np.bool_] | None
    found: npt.NDArray[np.int64]
    """Snapshot row per batch row, -1 where none."""
    bad: list[BadLine] = field(default_factory=list)
    """The batch's malformed lines."""
    kept: SourceBatch | None = None
    """The batch's rows not found in the snapshot, if kept (all of them: with ``bad``)."""


class _Scan:
    """The first pass: digests, snapshot matches, the keys of the rows not matched, and
    which matched rows share a key with another row (demoted: prepared in full)."""

    def __init__(
        self,
        mapper: BatchMapper,
        mapping: MappingConfig,
        base_dir: Path,
        snapshot: Snapshot | None,
        fp: bytes,
    ) -> None:
        self.seen: list[_Seen] = []
        self.reread = False
        self.fp = fp
        self.columns = mapper.columns_used
        self.later = snapshot is None
        """No snapshot to match: the digests (for the next snapshot only) are made in the
        second pass, batch by batch, not before the first row can be sent."""
        files: dict[str, int] = {}
        slow_h: list[npt.NDArray[np.int64]] = []  # match-key hashes of unmatched rows
        slow_ids: list[npt.NDArray[np.int64]] = []
        final_h: list[npt.NDArray[np.int64]] = []  # their ledger keys (ledger_key only)
        final_ids: list[npt.NDArray[np.int64]] = []
        first_run = HashRuns()  # match-key hashes when there is no snapshot to compare with
        owner = np.full(len(snapshot) if snapshot is not None else 0, -1, dtype=np.int64)
        columns = mapper.columns_used
        budget = KEEP_ROWS
        hidden: list[int] = []  # rows found whose cells may hide rows (mirror deletes)
        for sb in iter_source(mapping.source, base_dir):
            fidx = files.setdefault(sb.file, len(files))
            n = sb.batch.num_rows
            digested = supported(sb.batch.schema, columns) and not self.later
            got = row_digests(sb.batch, columns, fp) if digested else None
            digests, ok = got if got is not None else (None, None)
            found = np.full(n, -1, dtype=np.int64)
            if snapshot is not None and digests is not None and ok is not None:
                found = snapshot.match(digests, ok)
            ids = (np.int64(fidx) << ROW_BITS) | sb.rows
            fast = found >= 0
            mirror = mapping.mirror_deletes.enabled and mapping.source.kind == "csv"
            if snapshot is not None and mirror and fast.any():  # quotes hide rows in CSV only
                hiding = hiding_rows(sb.batch, sb.rows, mapping.source.delimiter)
                if hiding:  # prepared in full, to stop the step's mirror deletes
                    hidden += ids[np.isin(sb.rows, list(hiding))].tolist()
            owner[found[fast]] = ids[fast]  # the source row that matched each snapshot row
            slow = np.flatnonzero(~fast)
            sub = sb if len(slow) == n else _take(sb, slow)
            seen = _Seen(sb.file, sb.rows, digests, ok, found, sb.bad)
            if not self.reread:
                if len(slow) <= budget:
                    seen.kept = sub
                    budget -= len(slow)
                else:  # too many to keep: read the source again in the second pass
                    self.reread = True
                    for s in self.seen:
                        s.kept = None
            self.seen.append(seen)
            if not len(slow) or (not mapping.match_by and mapping.ledger_key is None):
                continue
            with gc_paused():
                sub_ids = ids[slow]
                if mapping.ledger_key is not None:  # rows sharing a declared ledger key
                    h, has = key_hashes(ledger_keys(mapping, sub.batch))
                    final_h.append(h)
                    final_ids.append(sub_ids[has])
                if not mapping.match_by:
                    continue
                if snapshot is None:
                    # only duplicates among the source's rows to find (no snapshot's keys to
                    # compare with): the key strings are never made, as in
                    # prepare.Duplicates.scan
                    h, has = mapper.key_hashes(sub.batch)
                    first_run.add(h[has], sub_ids[has])  # spilled to disk past a limit
                    continue
                h, has = key_hashes(mapper.keys_only(sub.batch))
                slow_h.append(h)
                slow_ids.append(sub_ids[has])
        self.files = list(files)
        groups = first_run.shared() if first_run.added else shared_hashes(slow_h, slow_ids)
        ledger_groups = shared_hashes(final_h, final_ids)
        demoted: list[int] = list(hidden)
        if snapshot is not None and slow_h:
            _clashes(groups, slow_h, slow_ids, snapshot.match_key_hashes(), owner, demoted)
        if snapshot is not None and final_h:
            _clashes(ledger_groups, final_h, final_ids, snapshot.key_hashes(), owner, demoted)
        if snapshot is not None:
            _found_twice(self.seen, files, snapshot, groups, demoted)
        self.dups = (
            Duplicates.combined(groups, ledger_groups, self.files)
            if mapping.match_by or mapping.ledger_key is not None
            else None
        )
        self.demoted = np.unique(np.array(demoted, dtype=np.int64))
        if len(self.demoted) and not self.reread:  # demoted rows were not kept: read again
            self.reread = True
            for s in self.seen:
                s.kept = None

    def owners(self) -> npt.NDArray[np.int64]:
        """Identities of the rows found in the snapshot and not demoted: they have a record
        of their own (the merge scan lets them claim their keys first)."""
        files = {f: i for i, f in enumerate(self.files)}
        found = [(np.int64(files[s.file]) << ROW_BITS) | s.rows[s.found >= 0] for s in self.seen]
        ids = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return ids[~np.isin(ids, self.demoted)] if len(self.demoted) else ids


def _found_twice(
    seen: list[_Seen],
    files: dict[str, int],
    snapshot: Snapshot,
    groups: dict[int, list[int]],
    demoted: list[int],
) -> None:
    """Rows that match the same snapshot row (the same cells exported twice) share its key:
    all of them are demoted, and grouped under that key for the duplicate rules."""
    found = [s.found[s.found >= 0] for s in seen]
    if not found or np.bincount(np.concatenate(found), minlength=1).max(initial=0) <= 1:
        return  # no snapshot row matched twice (the common case: decided in one pass)
    ids = [(np.int64(files[s.file]) << ROW_BITS) | s.rows[s.found >= 0] for s in seen]
    shared = shared_hashes(found, ids)  # snapshot row → the source rows that matched it
    if not shared:
        return
    rows = np.fromiter(shared, dtype=np.int64, count=len(shared))
    bys = snapshot.column("match_by", rows)
    mvs = snapshot.column("match_value", rows)
    for rids, by, mv in zip(shared.values(), bys, mvs, strict=True):
        demoted.extend(rids)
        if by is None or mv is None:
            continue
        group = groups.setdefault(hash(f"{by}:{mv}"), [])
        group.extend(r for r in rids if r not in group)
        group.sort()


def _take(sb: SourceBatch, positions: npt.NDArray[np.int64]) -> SourceBatch:
    return SourceBatch(sb.file, sb.batch.take(pa.array(positions)), sb.rows[positions], [])


def _clashes(
    groups: dict[int, list[int]],
    hashes: list[npt.NDArray[np.int64]],
    ids: list[npt.NDArray[np.int64]],
    snap: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    owner: npt.NDArray[np.int64],
    demoted: list[int],
) -> None:
    """Unmatched rows whose key hash is that of a snapshot row some row of this source
    matched: that row is demoted, and joins the duplicate group of the key (``groups``)."""
    sorted_h, order = snap
    if not len(sorted_h):
        return
    h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
    pos = np.minimum(np.searchsorted(sorted_h, h_all), len(sorted_h) - 1)
    hit = sorted_h[pos] == h_all
    for hv, rid, j in zip(
        h_all[hit].tolist(), id_all[hit].tolist(), pos[hit].tolist(), strict=True
    ):
        other = int(owner[order[j]])
        if other < 0:
            continue
        demoted.append(other)
        group = groups.setdefault(hv, [rid])
        if other not in group:
            group.append(other)
            group.sort()


def prepare_digested(
    mapping: MappingConfig,
    *,
    base_dir: Path,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    snapshot: Snapshot | None,
    fp: bytes,
    slice_rows: int | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
    owned: Owned | None = None,
) -> Iterator[Item]:
    """Yield, in source order, PreparedRows (with ``digest`` set where the row has one) and
    UnchangedBlocks of rows found in ``snapshot``. Config errors are raised before the
    first row, as in ``prepare_step`` (and ``slice_rows`` as there). ``owned``: which source
    keys have a record of their own in the ledger (for the merge scan)."""
    check_source(mapping, base_dir)
    mapper = BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users)
    scan = _Scan(mapper, mapping, base_dir, snapshot, fp)
    merges = scan_merges(
        mapping,
        base_dir=base_dir,
        schema=schema,
        users=users,
        dups=scan.dups,
        owners=scan.owners(),
        owned=owned,
    )
    return Blocks(
        _stream(mapping, base_dir, mapper, scan, snapshot, slice_rows, merges, max_request_bytes)
    )


def _with_digests(
    blocks: Iterator[list[PreparedRow]], seen: _Seen, positions: npt.NDArray[np.int64]
) -> Iterator[list[PreparedRow]]:
    """``blocks``, the prepared rows of batch rows ``positions`` (and bad lines, which have
    none), with ``digest`` set, a list at a time."""
    d, ok = seen.digests, seen.ok
    lines = seen.rows[positions]  # ascending, as the rows come
    for rows in blocks:
        if d is not None and ok is not None and len(lines):
            got = np.fromiter((r.source.source_row for r in rows), np.int64, len(rows))
            at = positions[np.minimum(np.searchsorted(lines, got), len(lines) - 1)]
            hit = (seen.rows[at] == got) & ok[at]  # not a bad line, and digested
            for r, pair in zip(compress(rows, hit.tolist()), d[at[hit]].tolist(), strict=True):
                r.digest = (pair[0], pair[1])
        yield rows


def _stream(
    mapping: MappingConfig,
    base_dir: Path,
    mapper: BatchMapper,
    scan: _Scan,
    snapshot: Snapshot | None,
    slice_rows: int | None,
    merges: MergeScan | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> Iterator[list[Item]]:
    files = {f: i for i, f in enumerate(scan.files)}
    gcb = BatchGC()
    policy = mapping.duplicates
    dups = scan.dups
    try:
        for seen, sb in zip(scan.seen, _second_pass(mapping, base_dir, scan), strict=True):
            fidx = files[seen.file]
            check_batch_columns(sb, mapper, mapping)
            found = seen.found
            fast = found >= 0
            if fast.any() and len(scan.demoted):
                ids = (np.int64(fidx) << ROW_BITS) | seen.rows
                fast &= ~np.isin(ids, scan.demoted)
            line_of = seen.rows.tolist()
            slow = np.flatnonzero(~fast)
            if len(slow) == len(fast) or snapshot is None:  # nothing found unchanged
                got = None
                if scan.later and supported(sb.batch.schema, scan.columns):
                    got = row_digests(sb.batch, scan.columns, scan.fp)
                if got is not None:
                    seen.digests, seen.ok = got
                rows = _blocks_of(
                    sb, mapper, dups, fidx, policy, gcb, slice_rows, max_request_bytes, merges
                )
                yield from cast(Iterator[list[Item]], _with_digests(rows, seen, slow))
                if scan.later:
                    seen.digests = seen.ok = None  # copied onto the rows
                continue
            slow_rows: list[PreparedRow] = []
            if len(slow):
                # read again: the whole batch; kept: just the unmatched rows (never demoted ones)
                sub = _take(sb, slow) if scan.reread else sb
                rows = _blocks_of(
                    sub, mapper, dups, fidx, policy, gcb, slice_rows, max_request_bytes, merges
                )
                slow_rows = [r for b in _with_digests(rows, seen, slow) for r in b]
            columns = sb.batch.schema.names
            bad = [bad_row(bl, sb.file, columns, mapper) for bl in seen.bad]
            yield list(_interleave(sb.file, fast, found, line_of, slow_rows, bad, snapshot))
    finally:
        gcb.release()


def _second_pass(mapping: MappingConfig, base_dir: Path, scan: _Scan) -> Iterator[SourceBatch]:
    """Per batch of the first pass: the batch read again, or the rows the first pass kept
    (rows not found in the snapshot; a batch whose rows were all found has none)."""
    if not scan.reread:
        for seen in scan.seen:
            assert seen.kept is not None
            yield seen.kept
        return
    b = 0
    for sb in iter_source(mapping.source, base_dir):
        if (
            b >= len(scan.seen)
            or scan.seen[b].file != sb.file
            or not np.array_equal(scan.seen[b].rows, sb.rows)
        ):
            raise SourceError(
                f"{sb.file} changed while it was being read (its rows differ between the"
                " two passes over it)",
                file=mapping.label,
                key="source.path",
                hint="run again once the export is complete",
            )
        b += 1
        yield sb
    if b != len(scan.seen):
        raise SourceError(
            f"{mapping.source.label}: the source ended early on the second pass over it",
            file=mapping.label,
            key="source.path",
            hint="run again once the export is complete",
        )


def _interleave(
    file: str,
    fast: npt.NDArray[np.bool_],
    found: npt.NDArray[np.int64],
    line_of: list[int],
    slow_rows: list[PreparedRow],
    bad_rows: list[PreparedRow],
    snapshot: Snapshot,
) -> Iterator[Item]:
    """The batch's rows in line order: runs of fast rows as blocks, the others one by one,
    the malformed lines (``bad_rows``) where they fall."""
    at, lines = found[fast], np.asarray(line_of, dtype=np.int64)
    n = len(fast)
    # runs of equal ``fast``, also cut where a malformed line falls between two rows
    cuts = set((np.flatnonzero(np.diff(fast.astype(np.int8))) + 1).tolist())
    bad_lines = [r.source.source_row for r in bad_rows]
    if bad_lines:
        at_pos = np.searchsorted(np.asarray(line_of), np.asarray(bad_lines)).tolist()
        cuts.update(i for i in at_pos if 0 < i < n)
    starts = [0, *sorted(cuts)]
    ends = [*sorted(cuts), n]
    k = 0  # next fast row (index into at/keys/...)
    s = 0  # next slow row
    b = 0  # next malformed line
    for a, z in zip(starts, ends, strict=True):
        while b < len(bad_rows) and bad_lines[b] < line_of[a]:
            yield bad_rows[b]
            b += 1
        if fast[a]:
            m = z - a
            names = ["key", "match_by", "match_value", "record_id"]
            got = snapshot.take(at[k : k + m], names)  # Arrow: the report writes blocks
            yield UnchangedBlock(file, lines[a:z], at[k : k + m], *got.columns)
            k += m
        else:
            yield from slow_rows[s : s + (z - a)]
            s += z - a
    yield from bad_rows[b:]

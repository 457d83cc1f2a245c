"""``prepare_digested``: :func:`recordsync.prepare.prepare_step` for a run that keeps source-row
digests (:mod:`recordsync.state.digests`): rows whose digest is in the last run's snapshot
come out as :class:`UnchangedBlock` s without being mapped; every other row is prepared as
usual and carries its digest (for the next snapshot).

Two passes, as in ``prepare_step``. The first digests every row, matches the digests against
the snapshot and finds duplicate keys: for rows the snapshot knows, their keys come from the
snapshot; for the others from the mapping's key columns. A snapshot row whose key another
row of the source also has (a duplicate, or the same ledger key) is *demoted*: it is
prepared in full, so that the duplicate rules see it. The second pass maps only the rows
that are not found unchanged (:mod:`.digest_scan`: the first pass). Memory does not grow
with the source: the first pass's per-batch arrays go to a temporary file past a limit
(:mod:`.seen_log`), as do a large snapshot's sorted digests
(:mod:`recordsync.state.digest_runs`) and the duplicate scan's hashes (:mod:`.dups`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from itertools import compress, repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.core.model import Blocks, PreparedRow, UnchangedBlock
from recordsync.map.engine import BatchMapper
from recordsync.prepare.cell_sample import CellSample
from recordsync.prepare.core import (
    ROW_BITS,
    _blocks_of,
    check_batch_columns,
    check_source,
    ramp,
)
from recordsync.prepare.digest_scan import Scan, take
from recordsync.prepare.merges import MergeScan, Owned, needed, scan_merges
from recordsync.prepare.salvage import bad_row
from recordsync.prepare.seen_log import Seen
from recordsync.read import SourceBatch, iter_source
from recordsync.state.batch_marks import BatchMarks
from recordsync.state.digests import Digests, row_digests, supported
from recordsync.state.snapshots import Snapshot
from recordsync.tuning import sizes
from recordsync.tuning.gcpause import BatchGC
from recordsync.tuning.native_memory import give_back
from recordsync.validate.entry_size import MAX_REQUEST_BYTES
from recordsync.validate.schema import Schema

Item = PreparedRow | UnchangedBlock
_source, _source_row = attrgetter("source"), attrgetter("source_row")


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
    sample_cells: int = 0,
    marks: BatchMarks | None = None,
) -> Iterator[Item]:
    """Yield, in source order, PreparedRows (with ``digest`` set where the row has one) and
    UnchangedBlocks of rows found in ``snapshot``. Config errors are raised before the
    first row, as in ``prepare_step`` (and ``slice_rows`` as there). ``owned``: which source
    keys have a record of their own in the ledger (for the merge scan). ``sample_cells``: keep
    the cells of that many rows found unchanged, picked at random, on their blocks
    (``UnchangedBlock.cells``: the read-back maps them). ``marks``: where the marks of the
    batches read go, for the next snapshot (:mod:`recordsync.state.batch_marks`)."""
    check_source(mapping, base_dir)
    mapper = BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users)
    sample = CellSample(sample_cells) if sample_cells and snapshot is not None else None
    scan = Scan(mapper, mapping, base_dir, snapshot, fp, sample, marks)
    owners = scan.owners() if needed(mapping) else None
    try:
        merges = scan_merges(
            mapping,
            base_dir=base_dir,
            schema=schema,
            users=users,
            dups=scan.dups,
            owners=owners.member if owners is not None else None,
            owned=owned,
        )
    finally:
        if owners is not None:
            owners.close()  # before the second pass reads the first pass's log
    # the rows the first pass demoted (found in the snapshot) were not among its ledger keys
    shared = scan.dups.ledger_keys if scan.dups is not None and not len(scan.demoted) else None
    return Blocks(
        _stream(mapping, base_dir, mapper, scan, snapshot, slice_rows, merges, max_request_bytes),
        shared,
    )


def _with_digests(
    blocks: Iterator[list[PreparedRow]], seen: Seen, positions: npt.NDArray[np.int64]
) -> Iterator[list[PreparedRow]]:
    """``blocks``, the prepared rows of batch rows ``positions`` (and bad lines, which have
    none), with ``digest`` set, a list at a time."""
    d, ok = seen.digests, seen.ok
    lines = seen.rows[positions]  # ascending, as the rows come
    for rows in blocks:
        if d is not None and ok is not None and len(lines):
            got = np.fromiter(map(_source_row, map(_source, rows)), np.int64, len(rows))
            at = positions[np.minimum(np.searchsorted(lines, got), len(lines) - 1)]
            hit = (seen.rows[at] == got) & ok[at]  # not a bad line, and digested
            digested = list(compress(rows, hit.tolist()))
            pairs = list(map(tuple, d[at[hit]].tolist()))  # (d0, d1) each, as Python ints
            if len(pairs) != len(digested):
                raise ValueError(f"{len(pairs)} digests for {len(digested)} rows")
            deque(map(setattr, digested, repeat("digest"), pairs), maxlen=0)  # a loop in C
        yield rows


def _stream(
    mapping: MappingConfig,
    base_dir: Path,
    mapper: BatchMapper,
    scan: Scan,
    snapshot: Snapshot | None,
    slice_rows: int | None,
    merges: MergeScan | None = None,
    max_request_bytes: int | None = MAX_REQUEST_BYTES,
) -> Iterator[list[Item]]:
    files = {f: i for i, f in enumerate(scan.files)}
    gcb = BatchGC()
    policy = mapping.duplicates
    dups = scan.dups
    pairs = _second_pass(mapping, base_dir, scan)
    parts: list[tuple[pa.RecordBatch, Digests, npt.NDArray[np.bool_]]] | None = []
    """The parts of the first read batch prepared one by one, with their digests: marked as
    one batch once the last is digested (None: one had no digests)."""
    try:
        for seen, sb in _head_first(pairs) if slice_rows else pairs:
            if parts and not seen.part:
                _mark_parts(scan, parts)
                parts = None
            fidx = files[seen.file]
            check_batch_columns(sb, mapper, mapping)
            found = seen.found
            fast = found >= 0
            if fast.any() and len(scan.demoted):
                ids = (np.int64(fidx) << ROW_BITS) | seen.rows
                fast &= ~np.isin(ids, scan.demoted)
            slow = np.flatnonzero(~fast)
            if len(slow) == len(fast) or snapshot is None:  # nothing found unchanged
                got = None
                if scan.later and supported(sb.batch.schema, scan.columns):
                    got = row_digests(sb.batch, scan.columns, scan.fp)
                if got is not None:
                    seen.digests, seen.ok = got
                    if scan.marks is not None and not seen.part:  # a whole read batch
                        _mark(scan, seen.cells, *got)
                    elif parts is not None and scan.marks is not None:
                        parts.append((sb.batch, *got))
                elif seen.part:
                    parts = None
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
                sub = take(sb, slow) if scan.reread else sb
                rows = _blocks_of(
                    sub, mapper, dups, fidx, policy, gcb, slice_rows, max_request_bytes, merges
                )
                slow_rows = [r for b in _with_digests(rows, seen, slow) for r in b]
            columns = sb.batch.schema.names
            bad = [bad_row(bl, sb.file, columns, mapper) for bl in seen.bad]
            lines = np.asarray(seen.rows, dtype=np.int64)
            items = list(_interleave(sb.file, fast, found, lines, slow_rows, bad, snapshot))
            if scan.cells is not None:  # the sampled rows' cells go with their blocks
                for item in items:
                    if type(item) is UnchangedBlock:
                        item.cells = scan.cells.cells_in(item.source_file, item.source_rows)
            yield items
        if parts:
            _mark_parts(scan, parts)
    finally:
        gcb.release()


def _mark(
    scan: Scan, spans: list[bytes] | None, digests: Digests, ok: npt.NDArray[np.bool_]
) -> None:
    """The marks of a whole read batch's spans (``spans``: their span digests), for the next
    snapshot."""
    assert scan.marks is not None
    scan.marks.add_spans(spans, sizes.MARK_ROWS, digests, ok)


def _mark_parts(
    scan: Scan, parts: list[tuple[pa.RecordBatch, Digests, npt.NDArray[np.bool_]]]
) -> None:
    """The marks of a read batch prepared in parts (:func:`_head_first`), as one batch: the
    next run reads it whole."""
    whole = pa.Table.from_batches([p[0] for p in parts]).combine_chunks().to_batches()
    if len(whole) == 1:
        digests = np.concatenate([p[1] for p in parts])
        _mark(scan, scan.spans(whole[0]), digests, np.concatenate([p[2] for p in parts]))


def _second_pass(
    mapping: MappingConfig, base_dir: Path, scan: Scan
) -> Iterator[tuple[Seen, SourceBatch]]:
    """Per batch of the first pass: what it learnt, and the batch read again or the rows the
    first pass kept (rows not found in the snapshot; a batch whose rows were all found has
    none). After each batch the heap's freed pages go back to the system, as the reader
    does after each batch it reads (:func:`recordsync.read.iter_source`): without it a pass
    over kept rows reads nothing, and what its batches freed (the rows carried into the
    next snapshot, the blocks found unchanged) stayed resident, growing with the source."""
    if not scan.reread:
        on_disk = scan.on_disk
        try:
            for seen in scan.seen:
                kept, seen.kept = seen.kept, None  # not held once its rows are prepared
                if seen.on_disk:  # read back: the Seen holds them no more, as above
                    assert on_disk is not None
                    kept, seen.on_disk = on_disk.next(seen), False
                assert kept is not None
                if scan.demoted_rows:  # a query's demoted rows, fetched again
                    kept = scan.with_demoted(seen, kept)
                yield seen, kept
                give_back()
        finally:
            if on_disk is not None:
                on_disk.close()
        return
    first = iter(scan.seen)
    for sb in iter_source(mapping.source, base_dir):
        got = next(first, None)
        if got is None or got.file != sb.file or not np.array_equal(got.rows, sb.rows):
            raise SourceError(
                f"{sb.file} changed while it was being read (its rows differ between the"
                " two passes over it)",
                file=mapping.label,
                key="source.path",
                hint="run again once the export is complete",
            )
        if got.cells is not None and got.cells != scan.spans(sb.batch):
            raise _read_otherwise(mapping, sb.file)
        yield got, sb
    if next(first, None) is not None:
        raise SourceError(
            f"{mapping.source.label}: the source ended early on the second pass over it",
            file=mapping.label,
            key="source.path",
            hint="run again once the export is complete",
        )


def _read_otherwise(mapping: MappingConfig, file: str) -> SourceError:
    """The second pass read other cells than the first where it read the same rows: what the
    first pass decided of each row (found unchanged, its digest, its duplicates) would be
    taken for another row's."""
    if mapping.source.query is not None:
        return SourceError(
            f"{mapping.source.label}: the second pass over the query read other values than the"
            " first in the same rows: rows that share a key came back in another order (ORDER"
            " BY leaves such rows in any order), or the rows changed meanwhile",
            file=mapping.label,
            key="source.key",
            hint="give the query a key no two rows share (add the columns that tell such rows"
            " apart to source.key), or run again once the rows stop changing",
        )
    return SourceError(
        f"{file} changed while it was being read (its cells differ between the two passes"
        " over it)",
        file=mapping.label,
        key="source.path",
        hint="run again once the export is complete",
    )


def _head_first(
    pairs: Iterator[tuple[Seen, SourceBatch]],
) -> Iterator[tuple[Seen, SourceBatch]]:
    """``pairs``, the first batch cut into the parts of :func:`recordsync.prepare.core.ramp`,
    as :func:`recordsync.prepare.core.head_first` does (when the batch holds every row the
    first pass saw in it): each part's digests, mapping and validation are its rows' only."""
    for i, (seen, sb) in enumerate(pairs):
        if i or len(sb.rows) != len(seen.rows):
            yield seen, sb
            continue
        for size in ramp(len(sb.rows)):
            (head_seen, seen), (head, sb) = seen.split(size), sb.split(size)
            yield head_seen, head
        yield seen, sb


def _interleave(
    file: str,
    fast: npt.NDArray[np.bool_],
    found: npt.NDArray[np.int64],
    lines: npt.NDArray[np.int64],
    slow_rows: list[PreparedRow],
    bad_rows: list[PreparedRow],
    snapshot: Snapshot,
) -> Iterator[Item]:
    """The batch's rows in line order: runs of fast rows as blocks, the others one by one,
    the malformed lines (``bad_rows``) where they fall."""
    at = found[fast]
    n = len(fast)
    # runs of equal ``fast``, also cut where a malformed line falls between two rows
    cuts = set((np.flatnonzero(np.diff(fast.astype(np.int8))) + 1).tolist())
    bad_lines = [r.source.source_row for r in bad_rows]
    if bad_lines:
        at_pos = np.searchsorted(lines, np.asarray(bad_lines)).tolist()
        cuts.update(i for i in at_pos if 0 < i < n)
    starts = [0, *sorted(cuts)]
    ends = [*sorted(cuts), n]
    k = 0  # next fast row (index into at/keys/...)
    s = 0  # next slow row
    b = 0  # next malformed line
    for a, z in zip(starts, ends, strict=True):
        while b < len(bad_rows) and bad_lines[b] < int(lines[a]):
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

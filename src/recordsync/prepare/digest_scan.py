"""The first pass of :func:`recordsync.prepare.digests.prepare_digested`: every row's digest,
its match in the last run's snapshot, the keys of the rows not matched, and which matched
rows share a key with another row (demoted: prepared in full, so that the duplicate rules
see them).

What the pass learns per batch is kept for the second pass in a
:class:`recordsync.prepare.seen_log.SeenLog` (on disk past a limit). Nothing else is kept
per row: which source row matched a snapshot row is looked up in the log only for the
snapshot rows that need it, and whether one snapshot row was matched twice is looked for
only when the rows did not come in the snapshot's order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.config.models import MappingConfig
from recordsync.map.engine import BatchMapper
from recordsync.prepare.cell_sample import CellSample
from recordsync.prepare.core import ROW_BITS, Duplicates, ledger_keys, shared_hashes
from recordsync.prepare.dups import HashRuns
from recordsync.prepare.owners import SnapshotOwners
from recordsync.prepare.seen_log import KeptRows, Seen, SeenLog
from recordsync.read import SourceBatch, iter_source
from recordsync.read.swallow import hiding_rows
from recordsync.state.batch_marks import BatchMarks, span_digests
from recordsync.state.digests import Digests, row_digests, supported
from recordsync.state.snapshot_match import key_hashes
from recordsync.state.snapshots import Snapshot
from recordsync.tuning import sizes
from recordsync.tuning.gcpause import gc_paused

log = logging.getLogger(__name__)


class Scan:
    """The first pass: digests, snapshot matches, the keys of the rows not matched, and
    which matched rows share a key with another row (demoted: prepared in full)."""

    def __init__(
        self,
        mapper: BatchMapper,
        mapping: MappingConfig,
        base_dir: Path,
        snapshot: Snapshot | None,
        fp: bytes,
        cells: CellSample | None = None,
        marks: BatchMarks | None = None,
    ) -> None:
        """``marks``: where the read batches' marks go, for the next snapshot
        (:mod:`recordsync.state.batch_marks`)."""
        self.seen = SeenLog()
        self.marks = marks
        self.cells = cells
        """A sample of the rows found, with their cells (the read-back's), or None."""
        self.reread = False
        """The second pass reads the source again: a file's rows not found were too many to
        keep, or rows found were demoted; a query's kept rows could not be written, or its
        demoted rows not fetched (:meth:`_fetch_demoted`)."""
        self.on_disk: KeptRows | None = None
        """A query's rows kept past the budget, on disk (None: none)."""
        self.fp = fp
        self.columns = mapper.columns_used
        self.later = snapshot is None
        """No snapshot to match: the digests (for the next snapshot only) are made in the
        second pass, batch by batch, not before the first row can be sent."""
        files: dict[str, int] = {}
        # match-key hashes of unmatched rows, and their ledger keys (ledger_key only): the
        # pairs grouped on disk past a limit (HashRuns); kept in lists too only when there is
        # a snapshot to compare them with (its clashes: few rows unless the export changed)
        slow_h: list[npt.NDArray[np.int64]] = []
        slow_ids: list[npt.NDArray[np.int64]] = []
        final_h: list[npt.NDArray[np.int64]] = []
        final_ids: list[npt.NDArray[np.int64]] = []
        # the key strings of those, while they are few: the snapshot's keys are then checked
        # against them in C++ (Snapshot.hash_batches), not each hashed in Python
        slow_keys: list[str] | None = []
        final_keys: list[str] | None = []
        match_runs, ledger_runs = HashRuns(), HashRuns()
        last = -1  # the highest snapshot row matched so far
        in_order = True  # every snapshot row matched after the one before: none twice
        columns = mapper.columns_used
        budget = sizes.UNMATCHED_KEEP_ROWS
        kept: list[Seen] = []
        hidden: list[int] = []  # rows found whose cells may hide rows (mirror deletes)
        for sb in iter_source(mapping.source, base_dir):
            fidx = files.setdefault(sb.file, len(files))
            n = sb.batch.num_rows
            readable = supported(sb.batch.schema, columns)
            spans = self.spans(sb.batch) if readable else None
            found = np.full(n, -1, dtype=np.int64)
            digests, ok = None, None
            if readable and not self.later and snapshot is not None:
                found, digests, ok = decide(sb.batch, columns, fp, snapshot, marks, spans)
            ids = (np.int64(fidx) << ROW_BITS) | sb.rows
            fast = found >= 0
            if cells is not None:
                cells.offer(sb, fast)
            mirror = mapping.mirror_deletes.enabled and mapping.source.kind == "csv"
            if snapshot is not None and mirror and fast.any():  # quotes hide rows in CSV only
                hiding = hiding_rows(sb.batch, sb.rows, mapping.source.delimiter)
                if hiding:  # prepared in full, to stop the step's mirror deletes
                    hidden += ids[np.isin(sb.rows, list(hiding))].tolist()
            at = found[fast]
            if len(at):
                in_order &= bool(at[0] > last) and bool((at[1:] > at[:-1]).all())
                last = max(last, int(at.max()))
            slow = np.flatnonzero(~fast)
            sub = sb if len(slow) == n else take(sb, slow)
            seen = Seen(sb.file, sb.rows, digests, ok, found, sb.bad, cells=spans)
            if not self.reread:
                if len(slow) <= budget:
                    seen.kept = sub
                    kept.append(seen)
                    budget -= len(slow)
                elif mapping.source.kind == "sql" and self._keep_on_disk(sub.batch):
                    seen.on_disk = True  # a query runs once: what it gave is what is sent
                else:  # too many to keep: read the source again in the second pass
                    self._read_again(kept)
            self.seen.append(seen)
            if not len(slow) or (not mapping.match_by and mapping.ledger_key is None):
                continue
            with gc_paused():
                sub_ids = ids[slow]
                if mapping.ledger_key is not None:  # rows sharing a declared ledger key
                    keys = ledger_keys(mapping, sub.batch)
                    h, has = key_hashes(keys)
                    ledger_runs.add(h, sub_ids[has])
                    if snapshot is not None:
                        final_h.append(h)
                        final_ids.append(sub_ids[has])
                        final_keys = _kept(final_keys, keys)
                if not mapping.match_by:
                    continue
                if snapshot is None:
                    # only duplicates among the source's rows to find (no snapshot's keys to
                    # compare with): the key strings are never made, as in
                    # prepare.Duplicates.scan
                    h, has = mapper.key_hashes(sub.batch)
                    match_runs.add(h[has], sub_ids[has])
                    continue
                keys = mapper.keys_only(sub.batch)
                h, has = key_hashes(keys)
                match_runs.add(h, sub_ids[has])
                slow_h.append(h)
                slow_ids.append(sub_ids[has])
                slow_keys = _kept(slow_keys, keys)
        self.files = list(files)
        self._fidx = files
        groups, ledger_groups = match_runs.shared(), ledger_runs.shared()
        demoted: list[int] = list(hidden)
        if snapshot is not None and slow_h:
            snap = snapshot.hash_batches("match", slow_keys)
            self._clashes(groups, slow_h, slow_ids, snap, demoted)
        if snapshot is not None and final_h:
            snap = snapshot.hash_batches("key", final_keys)
            self._clashes(ledger_groups, final_h, final_ids, snap, demoted)
        if snapshot is not None and not in_order:
            _found_twice(self.seen, files, snapshot, groups, demoted)
        self.dups = (
            Duplicates.combined(groups, ledger_groups, self.files)
            if mapping.match_by or mapping.ledger_key is not None
            else None
        )
        # not np.unique: its first call imports numpy.ma (~8 ms of a small run's start-up)
        self.demoted = np.array(sorted(set(demoted)), dtype=np.int64)
        self.demoted_rows: dict[int, pa.RecordBatch] = {}
        """A query's demoted rows by row id, fetched again (:meth:`_fetch_demoted`)."""
        if len(self.demoted) and not self.reread:  # demoted rows were not kept
            fetched = mapping.source.kind == "sql" and self._fetch_demoted(mapping, base_dir, kept)
            if not fetched:  # read the source again
                self._read_again(kept)
        if self.on_disk is not None:
            self.on_disk.finish()

    def _fetch_demoted(self, mapping: MappingConfig, base_dir: Path, kept: list[Seen]) -> bool:
        """A query's demoted rows (found in the snapshot, so not kept, and to be prepared in
        full after all), taken from the query run once more by their digests, not by their
        places: rows written or deleted in the database meanwhile move the others, and the
        rows the first pass kept stay what the second pass prepares. False when they cannot
        all be had as the first pass read them (one changed or went meanwhile, more than
        ``sizes.UNMATCHED_KEEP_ROWS`` of them, another schema): the second pass then reads
        the query again whole, and checks that it reads the same."""
        if len(self.demoted) > sizes.UNMATCHED_KEEP_ROWS:
            return False
        wanted: dict[tuple[int, int], list[int]] = {}
        for s in self.seen:
            ids = (np.int64(self._fidx[s.file]) << ROW_BITS) | s.rows
            hit = np.flatnonzero(np.isin(ids, self.demoted))
            if not len(hit):
                continue
            if s.digests is None or s.ok is None or not bool(s.ok[hit].all()):
                return False
            for i, d0, d1 in zip(hit.tolist(), *s.digests[hit].T.tolist(), strict=True):
                wanted.setdefault((d0, d1), []).append(int(ids[i]))
        schema = next((s.kept.batch.schema for s in kept if s.kept is not None), None)
        if self.on_disk is not None:
            schema = schema or self.on_disk.schema
        left = len(self.demoted)
        if schema is None or sum(map(len, wanted.values())) != left:
            return False
        for sb in iter_source(mapping.source, base_dir):
            got = row_digests(sb.batch, self.columns, self.fp)
            if not sb.batch.schema.equals(schema) or got is None:
                return False
            digests, ok = got
            at: list[int] = []
            rids: list[int] = []
            for j in np.flatnonzero(ok).tolist():
                key = (int(digests[j, 0]), int(digests[j, 1]))
                if key in wanted:
                    rids.append(wanted[key].pop(0))
                    at.append(j)
                    if not wanted[key]:
                        del wanted[key]
            if at:  # copied: a slice would hold the whole batch
                taken = sb.batch.take(pa.array(at))
                for k, rid in enumerate(rids):
                    self.demoted_rows[rid] = taken.slice(k, 1)
                left -= len(at)
            if not left:
                return True
        self.demoted_rows.clear()
        return False

    def with_demoted(self, seen: Seen, kept: SourceBatch) -> SourceBatch:
        """``kept`` (the rows of ``seen``'s batch not found) and the batch's demoted rows
        fetched again, in row order: the rows the second pass prepares."""
        ids = (np.int64(self._fidx[seen.file]) << ROW_BITS) | seen.rows
        mine = np.flatnonzero(np.isin(ids, self.demoted))
        if not len(mine):
            return kept
        extra = [self.demoted_rows.pop(int(ids[i])) for i in mine.tolist()]
        rows = np.concatenate([kept.rows, seen.rows[mine]])
        order = np.argsort(rows, kind="stable")
        table = pa.Table.from_batches([kept.batch, *extra]).take(pa.array(order))
        (batch,) = table.combine_chunks().to_batches()  # at least the one demoted row
        return SourceBatch(seen.file, batch, rows[order], [])

    def spans(self, batch: pa.RecordBatch) -> list[bytes] | None:
        """``batch``'s span digests (:func:`recordsync.state.batch_marks.span_digests` of
        ``sizes.MARK_ROWS`` rows each): what the first pass keeps of each batch
        (:attr:`Seen.cells`), marks, and checks a second read against."""
        return span_digests(batch, self.columns, self.fp, sizes.MARK_ROWS)

    def _keep_on_disk(self, batch: pa.RecordBatch) -> bool:
        """Keep a query's batch of rows not found in the :class:`KeptRows` file."""
        if self.on_disk is None:
            try:
                self.on_disk = KeptRows()
            except OSError as exc:  # no temporary file to be had
                log.warning("the query's rows could not be kept on disk (%s): it runs again", exc)
                return False
        return self.on_disk.add(batch)

    def _read_again(self, kept: list[Seen]) -> None:
        """The second pass reads the source again: nothing stays kept."""
        self.reread = True
        for s in kept:
            s.kept = None
        if self.on_disk is not None:
            self.on_disk.close()
            self.on_disk = None
            for s in self.seen.items:
                s.on_disk = False

    def owners(self) -> SnapshotOwners:
        """The rows found in the snapshot and not demoted: they have a record of their own
        (the merge scan lets them claim their keys first). Asked in source order, a batch at
        a time (:class:`.owners.SnapshotOwners`); close it before the second pass."""
        return SnapshotOwners(self.seen, self._fidx, self.demoted)

    def _matched_by(
        self, snapshot_rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Which source row matched each of ``snapshot_rows``: the snapshot rows sorted, each
        once, and a same-length array of the row id (file index and row) of the source row
        that matched each, the last one in the log's order if several did, -1 where none
        did."""
        wanted = np.unique(snapshot_rows)
        by = np.full(len(wanted), -1, dtype=np.int64)
        if not len(wanted):
            return wanted, by
        for s in self.seen:
            at = np.minimum(np.searchsorted(wanted, s.found), len(wanted) - 1)
            hit = np.flatnonzero((s.found >= 0) & (wanted[at] == s.found))
            if not len(hit):
                continue
            ids = (np.int64(self._fidx[s.file]) << ROW_BITS) | s.rows[hit]
            # the batch's last row per snapshot row: the first of the reversed rows (an
            # assignment through repeated indices keeps no defined one)
            u, last = np.unique(at[hit][::-1], return_index=True)
            by[u] = ids[::-1][last]
        return wanted, by

    def _clashes(
        self,
        groups: dict[int, list[int]],
        hashes: list[npt.NDArray[np.int64]],
        ids: list[npt.NDArray[np.int64]],
        snap: Iterable[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.bool_]]],
        demoted: list[int],
    ) -> None:
        """Unmatched rows whose key hash is that of a snapshot row some row of this source
        matched: that row is demoted, and joins the duplicate group of the key (``groups``).
        ``snap``: the snapshot's key hashes, a batch at a time in file order
        (:meth:`Snapshot.hash_batches`): only the first snapshot row of each hash an
        unmatched row has is kept (an array as long as those hashes), never every snapshot
        row's hash."""
        h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
        if not len(h_all):
            return
        wanted = np.unique(h_all)
        first = np.full(len(wanted), -1, dtype=np.int64)  # the first snapshot row per hash
        for start, h, has in snap:
            at = np.minimum(np.searchsorted(wanted, h), len(wanted) - 1)
            hit = np.flatnonzero(wanted[at] == h)
            if not len(hit):
                continue
            rows = np.flatnonzero(has)[hit] + start
            u, once = np.unique(at[hit], return_index=True)  # the batch's first row per hash
            new = first[u] < 0
            first[u[new]] = rows[once[new]]
        got = first >= 0
        if not got.any():
            return
        # the hashes a snapshot row has (sorted, each once) and the first snapshot row of each
        known_h, first = wanted[got], first[got]
        del wanted, got
        rows, by = self._matched_by(first)
        pos = np.minimum(np.searchsorted(known_h, h_all), len(known_h) - 1)
        known = known_h[pos] == h_all
        # the source row that matched the first snapshot row of each known row's hash
        other = by[np.searchsorted(rows, first[pos[known]])]
        mine = other >= 0
        for hv, rid, oth in zip(
            h_all[known][mine].tolist(),
            id_all[known][mine].tolist(),
            other[mine].tolist(),
            strict=True,
        ):
            demoted.append(oth)
            group = groups.setdefault(hv, [rid])
            if oth not in group:
                group.append(oth)
                group.sort()


def _found_twice(
    seen: SeenLog,
    files: dict[str, int],
    snapshot: Snapshot,
    groups: dict[int, list[int]],
    demoted: list[int],
) -> None:
    """Rows that match the same snapshot row (the same cells exported twice) share its key:
    all of them are demoted, and grouped under that key for the duplicate rules. (Called
    only when the rows did not match the snapshot in its own order.)"""
    matched = np.zeros(len(snapshot), dtype=np.bool_)
    twice: list[npt.NDArray[np.int64]] = []
    for s in seen:
        f = s.found[s.found >= 0]
        u, k = np.unique(f, return_counts=True)
        again = np.concatenate([u[matched[u]], u[k > 1]])
        if len(again):
            twice.append(again)
        matched[u] = True
    del matched
    if not twice:
        return  # no snapshot row matched twice
    rows_twice = np.unique(np.concatenate(twice))
    found: list[npt.NDArray[np.int64]] = []
    ids: list[npt.NDArray[np.int64]] = []
    for s in seen:
        at = np.flatnonzero(np.isin(s.found, rows_twice))
        found.append(s.found[at])
        ids.append((np.int64(files[s.file]) << ROW_BITS) | s.rows[at])
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


def decide(
    batch: pa.RecordBatch,
    columns: list[str],
    fp: bytes,
    snapshot: Snapshot,
    marks: BatchMarks | None,
    spans: list[bytes] | None = None,
) -> tuple[npt.NDArray[np.int64], Digests | None, npt.NDArray[np.bool_] | None]:
    """Per row of ``batch``: the snapshot row it matches (-1: none), its digest and whether it
    has one; None for both where a column cannot be digested. Each span the snapshot marks
    is matched as a whole where its rows come next
    (:meth:`recordsync.state.snapshots.Snapshot.match_span`); the rows of the other spans
    are digested and matched one by one, a run of such spans at a time. What it finds is what
    digesting every row finds. The spans' marks go to ``marks``. ``spans``: the batch's span
    digests, if made already."""
    n = batch.num_rows
    size = sizes.MARK_ROWS
    if spans is None:
        spans = span_digests(batch, columns, fp, size)
    found = np.full(n, -1, dtype=np.int64)
    if spans is None:
        return found, None, None
    digests = np.zeros((n, 2), dtype=np.uint64)
    ok = np.zeros(n, dtype=np.bool_)
    todo = 0  # the first row not decided yet: rows todo..a are digested one by one
    skip = 0  # rows not found since the last one found (changed: their old rows lie between)

    def one_by_one(end: int) -> int:
        """Rows ``todo`` to ``end`` digested and matched; how many of them at the end, after
        the last one found, were not found (all of them: ``skip`` more)."""
        if end <= todo:
            return skip
        got = row_digests(batch.slice(todo, end - todo), columns, fp)
        if got is None:  # not reached: the spans had a text form
            raise ValueError("a batch whose spans were digested has rows that cannot be")
        digests[todo:end], ok[todo:end] = got
        found[todo:end] = hit = snapshot.match(*got)
        last = np.flatnonzero(hit >= 0)
        return end - todo + skip if not len(last) else end - todo - 1 - int(last[-1])

    for j, span in enumerate(spans):
        a, b = j * size, min((j + 1) * size, n)
        if span not in snapshot.marks:
            continue
        skip = one_by_one(a)  # the rows before it first: its rows are expected after theirs
        todo = a
        known = snapshot.match_span(span, b - a, skip)
        if known is not None:
            found[a:b], digests[a:b] = known
            ok[a:b] = True
            todo, skip = b, 0
    one_by_one(n)
    if marks is not None:
        marks.add_spans(spans, size, digests, ok)
    return found, digests, ok


def _kept(kept: list[str] | None, keys: list[str | None]) -> list[str] | None:
    """``kept`` and the keys that are there, while they number at most
    ``sizes.CLASH_KEYS_KEPT``; None past it (and once None)."""
    if kept is None:
        return None
    kept.extend(k for k in keys if k is not None)
    return kept if len(kept) <= sizes.CLASH_KEYS_KEPT else None


def take(sb: SourceBatch, positions: npt.NDArray[np.int64]) -> SourceBatch:
    return SourceBatch(sb.file, sb.batch.take(pa.array(positions)), sb.rows[positions], [])

"""The state hook's row side: a step's rows as they stream in (:class:`StateHook`).

- :meth:`source`: the step's rows, with rows found in the last run's snapshot of source-row
  digests coming as UnchangedBlocks (a new snapshot is written as the step goes);
- :meth:`classify`: rows classified in groups of :data:`CLASSIFY_ROWS`: unchanged rows are
  reported ``unchanged`` and not sent; rows whose last send was in doubt are held as
  ``in_doubt`` again unless resending them is safe (:mod:`recordsync.core.safety`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from recordsync.config.models import MappingConfig
from recordsync.core.errors import ApiError, AuthError
from recordsync.core.model import (
    Blocks,
    Item,
    PreparedRow,
    RowStatus,
    StepPlan,
    UnchangedBlock,
    values_of,
)
from recordsync.core.run_ids import first_attempt_started
from recordsync.core.safety import resend_as_is_safe
from recordsync.state.ledger_prep import StepPrep
from recordsync.state.target_check import Adoptable, PageReader, apply, check, load_mark

if TYPE_CHECKING:
    from recordsync.state import Journal, StateStore
    from recordsync.state.journal_content import JournaledRows
    from recordsync.state.ref_lookup import Fetch
    from recordsync.state.snapshots import SnapshotWriter

log = logging.getLogger(__name__)
CLASSIFY_ROWS = 500
FOLD_ROWS = 100_000
"""Acknowledged rows that are folded into the ledger in one sorted bulk write
(:meth:`Journal.fold`) between chunks, should the slices
(:data:`recordsync.state.hook.FOLD_SLICE`) not keep up."""


class StepRows:
    """:class:`recordsync.state.hook.StateHook`'s classification of a step's rows (the
    hook sets the state)."""

    store: StateStore
    journal: Journal
    run_id: str
    pipeline: str
    full_refresh: bool
    resend_in_doubt: bool
    resumed: bool
    configs: Mapping[str, MappingConfig]
    lookup: Fetch | None
    mirror_deletes: bool
    _offset: dict[str, int]
    _hash: dict[int, str]
    _known: dict[int, int | None]
    _prep: dict[str, StepPrep]
    _journaled: dict[str, JournaledRows]
    _snap: SnapshotWriter | None
    _snap_fp: bytes
    reader: PageReader | None
    object_types: set[str]
    notes: list[str]
    _adoptable: dict[str, Adoptable]
    watch_source: Callable[[StepPlan], None]  # :class:`recordsync.state.hook_step_end.StepEnd`

    def source(self, plan: StepPlan) -> Iterable[Item]:
        """The step's rows. A complete, first-attempt run of a whole pipeline digests its
        source rows (:mod:`recordsync.prepare.digests`): rows found in the snapshot of the last
        run come as UnchangedBlocks, and a new snapshot is written as the step goes. The
        step's old snapshot is dropped here in any case, before anything is sent."""
        from recordsync.state.snapshots import SnapshotWriter, take

        self.watch_source(plan)  # before any read: a file changing from here stops deletes
        self._discard_snapshot()
        fp = None
        offered = plan.digested is not None and plan.fingerprint is not None
        whole = self.mirror_deletes and not self.resumed  # not a retry, not a resume
        if offered and whole and plan.name in self.configs:
            assert plan.fingerprint is not None
            fp = plan.fingerprint()
        checked = self._check_target(plan)  # records edited or deleted in the target
        drop = self.full_refresh or checked
        old = take(self.store, self.pipeline, plan.name, None if drop else fp)
        if fp is None or plan.digested is None:
            return plan.rows()
        self._snap = SnapshotWriter(self.store, self.pipeline, plan.name, self.run_id)
        self._snap_fp = fp
        self._snap.source = old
        return plan.digested(old, fp, lambda keys: self._owned(plan, keys))

    def _check_target(self, plan: StepPlan) -> bool:
        """Whether the target changed under the step's ledger since the last run
        (:mod:`recordsync.state.target_check`); what was found is in the ledger then, and in
        :attr:`notes`."""
        reader = self.reader
        if reader is None:
            return False
        self.object_types.add(plan.object_type)
        conn = self.store.connection
        scope = self.store.scope_id(self.pipeline, plan.name, create=False)
        mark = load_mark(conn, self.pipeline, plan.object_type)
        if scope is None or mark is None:
            return False
        try:
            finding = check(reader, conn, scope, plan.object_type, mark)
        except AuthError:
            raise
        except ApiError as exc:  # a service without the list endpoint: say so, go on
            note = (
                f"step {plan.name}: the target could not be checked for records edited or"
                f" deleted since the last run ({exc}); the ledger was trusted"
            )
            self.notes.append(note)
            log.warning("%s", note)
            return False
        if not finding.found:
            return False
        with self.store.transaction() as tx:
            apply(tx, scope, finding)
        if finding.unknown:
            self._adoptable[plan.name] = Adoptable(finding.unknown)
        for line in finding.lines(plan.name):
            self.notes.append(line)
            log.warning("%s", line)
        return True

    def _owned(self, plan: StepPlan, keys: list[str]) -> set[str]:
        """The keys that have a live record of their own in the step's ledger."""
        found = self.store.lookup_many(self.pipeline, plan.name, keys)
        return {
            k for k, e in found.items() if e.record_id is not None and e.last_status != "deleted"
        }

    def _discard_snapshot(self) -> None:
        if self._snap is not None:
            self._snap.discard()
            self._snap = None

    def classify(self, plan: StepPlan, rows: Iterable[Item]) -> Iterator[Item]:
        """``rows`` classified (lazily, a group at a time), flattened in C; ``close()`` ends
        the classification and the rows' stream."""
        return Blocks(self._classified(plan, rows))

    def _classified(self, plan: StepPlan, rows: Iterable[Item]) -> Iterator[list[Item]]:
        from recordsync.state import ChangeDetector, ledger_match

        journal = self.journal
        journal.fold()  # earlier steps' outcomes, before references read their ledgers
        self._offset[plan.name] = journal.next_chunk_no(self.run_id, plan.name) - 1
        done = None
        if self.resumed:  # journaled rows are found by key and content, not by line
            done = journal.journaled_rows(self.run_id, plan.name)
            journal.restart_marks(self.run_id, plan.name)
            self._journaled[plan.name] = done
        config = self.configs.get(plan.name)
        prep = None
        if config is not None:
            prep = StepPrep(
                self.store,
                self.pipeline,
                plan.name,
                config,
                self.configs,
                mirror=self.mirror_deletes,
                lookup=self.lookup,
            )
            self._prep[plan.name] = prep
        detector = ChangeDetector(
            self.store,
            self.pipeline,
            plan.name,
            full_refresh=self.full_refresh,
            match_by_ledger_id=config is not None and config.match_by_ledger_id,
            journaled=done,
        )
        snap = self._snap
        for items in _groups(rows):
            if journal.unfolded_rows >= FOLD_ROWS:
                journal.fold()
            group = cast(list[PreparedRow], items)  # rows only: classified as they are
            if UnchangedBlock in set(map(type, items)):
                group = []
                for item in items:
                    if type(item) is UnchangedBlock:  # found in the snapshot: nothing to decide
                        detector.counts["unchanged"] += len(item)
                        if snap is not None:
                            snap.add_from_block(item)
                        if detector.match_by_ledger_id:  # it would be sent by its record id
                            item.by_record_id()
                        if prep is not None and prep.seen_keys is not None:
                            prep.seen_keys.extend(values_of(item.keys))
                    else:
                        assert isinstance(item, PreparedRow)
                        group.append(item)
            if not group:
                yield items
                continue
            if prep is not None and prep.active:
                prep.apply(group)
            c = detector.classify(group)
            # outcome journaled by the attempt that died: report it, never resend
            for r, o in zip(c.done, c.outcomes, strict=True):
                r.status, r.error = RowStatus(o.status), o.error
                self._known[id(r)] = o.record_id
            for u in c.unchanged:
                u.row.status = RowStatus.UNCHANGED
                if detector.match_by_ledger_id and u.row.payload is not None:
                    u.row.payload = ledger_match(u.row.payload, u.entry)  # as it would be sent
                self._known[id(u.row)] = u.entry.record_id
                if snap is not None:
                    keep_row(snap, u.row, u.entry.record_id)
            hashes = self._hash
            adoptable = self._adoptable.get(plan.name)
            for t in c.to_send:
                row = t.row
                row.payload, row.encoded = t.payload, t.encoded
                hashes[id(row)] = t.input_hash
                if (
                    adoptable is not None
                    and t.entry is None  # new to the ledger
                    and not resend_as_is_safe(plan.object_type, t.payload)
                ):
                    rid = adoptable.claim(t.payload)
                    if rid is not None:  # written by a run the state does not remember
                        row.payload = {**t.payload, "match_by": "id", "match_value": rid}
                        row.encoded = None
                if (
                    t.entry is not None  # a first send was never in doubt
                    and t.was_in_doubt
                    and not self.resend_in_doubt
                    and not resend_as_is_safe(plan.object_type, t.payload)
                ):
                    since = t.row.maybe_applied_since or _run_started(t.entry)
                    if since is not None:  # the sender reads it back before sending it
                        t.row.maybe_applied_since = since
                        continue
                    t.row.status = RowStatus.IN_DOUBT
                    t.row.error = (
                        "held in doubt: an earlier send of this row may have been applied and "
                        "resending could create a second record; check the target, then "
                        "`recordsync retry --resend-in-doubt` the report"
                    )
            yield items


def keep_row(snap: SnapshotWriter, row: PreparedRow, record_id: int | None) -> None:
    """Into the next snapshot: a row that ended created / updated / unchanged."""
    if row.digest is not None and row.key is not None and record_id is not None:
        snap.add(row.digest, row.key, row.match_by, row.match_value, record_id)


def _run_started(entry: object) -> float | None:
    """When the run that left ``entry`` in doubt started (its run id begins with the UTC
    start; a resumed run keeps the first attempt's: earlier still)."""
    return first_attempt_started(getattr(entry, "last_run_id", None))


def _groups(rows: Iterable[Item]) -> Iterator[list[Item]]:
    """``rows`` in groups of about :data:`CLASSIFY_ROWS` rows (see :func:`_next_items`): a
    :class:`Blocks` stream's lists of rows only are cut in slices, never walked row by row."""
    if isinstance(rows, Blocks):
        for items in rows.lists:
            if UnchangedBlock in set(map(type, items)):
                yield from _groups(iter(items))
                continue
            for i in range(0, len(items), CLASSIFY_ROWS):
                yield items[i : i + CLASSIFY_ROWS]
        return
    it = iter(rows)
    while items := _next_items(it):
        yield items


def _next_items(it: Iterator[Item]) -> list[Item]:
    """The next items of ``it``, up to :data:`CLASSIFY_ROWS` rows, a block counting its rows
    (a block can be a whole source batch: 500 blocks may be a whole large source)."""
    out: list[Item] = []
    rows = 0
    for item in it:
        out.append(item)
        rows += len(item) if type(item) is UnchangedBlock else 1
        if rows >= CLASSIFY_ROWS:
            break
    return out

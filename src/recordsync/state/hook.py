"""The run's use of the state store (docs/state.md): lock, change detection, chunk journal.

    with open_state(pipeline, path, run_id) as state:       # lock; settle a dead run; start
        run_plans(..., hook=state)                            # classify / begin / ack per chunk
        state.finish(aborted=...)

- rows are classified in groups of :data:`CLASSIFY_ROWS` as they stream: unchanged rows are
  reported ``unchanged`` and not sent; rows whose last send was in doubt are held as
  ``in_doubt`` again unless resending them is safe (:mod:`recordsync.send.safety`);
- before that, per mapping (``configs``, :mod:`recordsync.state.ledger_prep`): declared
  ledger keys, ``ref`` fields resolved from earlier steps' ledgers, and with
  ``match_by_ledger_id`` rows the ledger knows are sent with ``match_by: id``;
- every chunk is journaled before it is sent and acknowledged after; the acknowledged
  outcomes reach the ledger from the journal in key-sorted batches, written a slice with
  each acknowledgement (:data:`FOLD_FROM`) and the rest at each step's end and the run's
  end (a resumed run folds its dead attempt's);
- when a step's rows are all acknowledged, its mirror deletes run (:meth:`step_done`);
- a run that died (``running`` in the journal) is resumed: its run id is reused, its
  in-flight chunks are settled (safe rows are sent again, the others held ``in_doubt``),
  rows whose outcome it already journaled are reported from the journal and never sent
  again, and chunk numbers continue after its last one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recordsync.config.models import MappingConfig
from recordsync.model import Item, PreparedRow, RowStatus, StepPlan, UnchangedBlock, values_of
from recordsync.reconcile.batch import EntryResult
from recordsync.report.tally import StepTally
from recordsync.run_ids import first_attempt_started
from recordsync.send.safety import resend_as_is_safe
from recordsync.state.checkpoint import BackgroundCheckpoints
from recordsync.state.ledger_prep import StepPrep
from recordsync.state.store import DB_ERRORS

if TYPE_CHECKING:
    from recordsync.state import Journal, StateStore
    from recordsync.state.journal_content import JournaledRows
    from recordsync.state.location import PgUrl
    from recordsync.state.ref_lookup import Fetch
    from recordsync.state.snapshots import SnapshotWriter

Deleter = Callable[[str, int], object]
"""``deleter(object_type, record_id)``: soft-delete one record (already gone is fine)."""

log = logging.getLogger(__name__)
CLASSIFY_ROWS = 500
FOLD_FROM = 20_000
FOLD_SLICE = 500
"""The ledger is written while a step runs, :data:`FOLD_SLICE` rows with each acknowledged
chunk, from key-sorted batches of what was acknowledged, a batch once :data:`FOLD_FROM` rows
wait (:attr:`Journal.slices`): at the step's end at most about that many are left to write."""
FOLD_ROWS = 100_000
"""Acknowledged rows that are folded into the ledger in one sorted bulk write
(:meth:`Journal.fold`) between chunks, should the slices above not keep up."""


class StateHook:
    """Implements :class:`recordsync.send.step.ChunkHook` on a StateStore and a Journal."""

    def __init__(
        self,
        store: StateStore,
        journal: Journal,
        run_id: str,
        pipeline: str,
        *,
        full_refresh: bool = False,
        resend_in_doubt: bool = False,
        resumed: bool = False,
    ) -> None:
        self.resumed = resumed
        self._offset: dict[str, int] = {}
        self.store = store
        self.journal = journal
        self.run_id = run_id
        self.pipeline = pipeline
        self.full_refresh = full_refresh
        self.resend_in_doubt = resend_in_doubt
        self._hash: dict[int, str] = {}
        self._known: dict[int, int | None] = {}
        self.configs: Mapping[str, MappingConfig] = {}
        """Mapping configs by step name (ledger keys, references, mirror deletes)."""
        self.deleter: Deleter | None = None
        self.lookup: Fetch | None = None
        """Reads the service's records for ``lookup: service`` references."""
        self.allow_mass_deletes = False
        self.mirror_deletes = True
        """False for a partial run (a retry of failed rows): no mirror deletes at all."""
        self._prep: dict[str, StepPrep] = {}
        self._journaled: dict[str, JournaledRows] = {}
        self._snap: SnapshotWriter | None = None
        self._snap_fp = b""
        self.background: BackgroundCheckpoints | None = None
        """Checkpoints of the state database's log while the run writes (stopped before the
        run's final checkpoint, :meth:`finish`)."""

    def source(self, plan: StepPlan) -> Iterable[Item]:
        """The step's rows. A complete, first-attempt run of a whole pipeline digests its
        source rows (:mod:`recordsync.prepare.digests`): rows found in the snapshot of the last
        run come as UnchangedBlocks, and a new snapshot is written as the step goes. The
        step's old snapshot is dropped here in any case, before anything is sent."""
        from recordsync.state.snapshots import SnapshotWriter, take

        self._discard_snapshot()
        fp = None
        offered = plan.digested is not None and plan.fingerprint is not None
        whole = self.mirror_deletes and not self.resumed  # not a retry, not a resume
        if offered and whole and plan.name in self.configs:
            assert plan.fingerprint is not None
            fp = plan.fingerprint()
        old = take(self.store, self.pipeline, plan.name, None if self.full_refresh else fp)
        if fp is None or plan.digested is None:
            return plan.rows()
        self._snap = SnapshotWriter(self.store, self.pipeline, plan.name, self.run_id)
        self._snap_fp = fp
        self._snap.source = old
        return plan.digested(old, fp, lambda keys: self._owned(plan, keys))

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
        it = iter(rows)
        while items := _next_items(it):
            if journal.unfolded_rows >= FOLD_ROWS:
                journal.fold()
            group: list[PreparedRow] = []
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
                yield from items
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
                    _keep(snap, u.row, u.entry.record_id)
            for t in c.to_send:
                t.row.payload = t.payload
                t.row.encoded = t.encoded
                self._hash[id(t.row)] = t.input_hash
                if (
                    t.was_in_doubt
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
            yield from items

    def record_id_of(self, row: PreparedRow) -> int | None:
        return self._known.pop(id(row), None)

    def other_owners(
        self, plan: StepPlan, pairs: list[tuple[str | None, int]]
    ) -> dict[int, list[str]]:
        """For ``(key, record id)`` pairs of rows just answered ``updated``: the ledger keys
        holding each record id that a row's own key does not hold
        (:mod:`recordsync.send.claims`: a key other than the row's own is a merge). A row
        whose own key holds the id costs one indexed look-up; only the others are searched
        by record id."""
        keys = [k for k, _ in pairs if k is not None]
        own = self.store.lookup_many(self.pipeline, plan.name, keys) if keys else {}
        ask = sorted(
            {rid for k, rid in pairs if k is None or k not in own or own[k].record_id != rid}
        )
        scope = self.store.scope_id(self.pipeline, plan.name, create=False)
        if not ask or scope is None:
            return {}
        rows = self.store.connection.execute(
            "SELECT source_key, record_id FROM ledger WHERE scope_id = ? AND last_status !="
            f" 'deleted' AND record_id IN ({','.join('?' * len(ask))})",
            (scope, *ask),
        ).fetchall()
        out: dict[int, list[str]] = {}
        for key, rid in rows:
            out.setdefault(int(rid), []).append(str(key))
        return out

    def begin(self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow]) -> None:
        from recordsync.state import journal_columns as columns

        safe = [resend_as_is_safe(plan.object_type, r.payload or {}) for r in rows]
        journal_rows = columns.journal_rows(rows, self._hash, safe)
        self.journal.begin_chunk(
            self.run_id,
            plan.name,
            chunk_no + self._offset.get(plan.name, 0),
            rows[0].source.source_row if rows else None,
            journal_rows,
            mapping=plan.name,
            cleared=False,  # queued: the runner clears it before its request is written
        )

    def clear(self, plan: StepPlan, chunk_nos: list[int]) -> None:
        """Clear begun chunks to be sent (:meth:`Journal.clear_chunks`); in the caller's
        transaction when there is one."""
        offset = self._offset.get(plan.name, 0)
        self.journal.clear_chunks(self.run_id, plan.name, [n + offset for n in chunk_nos])

    def ack(
        self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow], results: list[EntryResult]
    ) -> None:
        from recordsync.state import journal_columns as columns

        if len(rows) != len(results):  # before any change: nothing half-acknowledged
            raise ValueError(f"{len(results)} results for a chunk of {len(rows)} rows")
        outcomes = columns.chunk_results(rows, results)
        forget = self._hash.pop
        snap = self._snap
        kept = (RowStatus.CREATED, RowStatus.UPDATED)
        for r, res in zip(rows, results, strict=True):
            forget(id(r), None)
            if snap is not None and res.status in kept:
                _keep(snap, r, res.record_id)
        self.journal.ack_chunk(
            self.run_id, plan.name, chunk_no + self._offset.get(plan.name, 0), outcomes
        )

    def source_read(self, plan: StepPlan) -> None:
        """The step's last chunks are in flight: write what was acknowledged so far to the
        ledger now, while the runner waits for them (about 0.1 s of a 100k-row step's end,
        20,000 rows at most), rather than after the last answer (:meth:`step_done`). If
        that write fails, it is rolled back and left to :meth:`step_done`, once the chunks in
        flight are settled and reported."""
        try:
            self.journal.fold()
        except DB_ERRORS as exc:
            log.warning(
                "writing the ledger of step %s early failed (%s); retried at its end",
                plan.name,
                exc,
            )

    def ref_counts(self, step: str) -> dict[str, dict[str, Any]]:
        """The step's reference outcomes (:meth:`StepPrep.ref_counts`); forgets the step."""
        prep = self._prep.pop(step, None)
        return prep.ref_counts() if prep is not None else {}

    def step_done(self, plan: StepPlan, tally: StepTally) -> None:
        """Every row of the step is reported and acknowledged: mirror deletes, if enabled."""
        from recordsync.state import apply_deletes, plan_deletes

        self.journal.fold()  # the step's ledger complete: for mirror deletes and later steps
        journaled = self._journaled.pop(plan.name, None)
        if journaled is not None and (journaled.moved or journaled.left()):
            tally.source_changed = (
                f"the source changed since the interrupted attempt: {journaled.left()} rows it"
                f" sent are not in it with the same key and content, {journaled.moved} are on"
                " other lines; rows were matched by key and content and the others decided"
                " again"
            )
            log.warning("step %s: %s", plan.name, tally.source_changed)
        if self._snap is not None:
            self._snap.commit(self._snap_fp)
            self._snap = None
        prep = self._prep.get(plan.name)
        if prep is None or prep.seen_keys is None:
            return
        if prep.mirror_skip is not None:  # unreadable is not absent: rows may hide in it
            tally.mirror_skipped = (
                f"{prep.mirror_skip}; rows may be missing from what was read, so no record was"
                " deleted: fix the line in the source"
            )
            log.warning("step %s: mirror deletes skipped: %s", plan.name, tally.mirror_skipped)
            prep.seen_keys = None
            return
        md = prep.config.mirror_deletes
        unlimited = self.allow_mass_deletes
        deletes = plan_deletes(
            self.store,
            self.pipeline,
            plan.name,
            prep.seen_keys,
            max_count=None if unlimited else md.max_count,
            max_share=None if unlimited else md.max_share,
        )
        prep.seen_keys = None
        if not deletes.deletes:
            return
        deleter = self.deleter
        if deleter is None:
            raise RuntimeError("mirror deletes need a deleter (StateHook.deleter)")
        done = apply_deletes(
            deletes, lambda rid: deleter(plan.object_type, rid), run_id=self.run_id
        )
        tally.deleted += len(done.deleted)
        tally.delete_failed += len(done.failed)
        for key, rid, message in done.failed[:20]:
            log.error(
                "mirror delete of %s record %d (key %r) failed: %s", plan.name, rid, key, message
            )

    def atomic(self) -> AbstractContextManager[object]:
        return self.journal.transaction()

    def finish(self, state: str) -> None:
        self._discard_snapshot()
        if self.background is not None:
            self.background.close()
        self.journal.finish_run(self.run_id, state)

    def attempts(self) -> int:
        """How many tries this run has had (a resumed run: more than one)."""
        info = self.journal.run(self.run_id)
        return info.attempts if info is not None else 1

    def chunks_before(self, step: str) -> int:
        """The chunks of ``step`` that earlier attempts of this run journaled (the report of
        a resumed run counts every attempt's chunks)."""
        if step not in self._offset:  # the step never started in this attempt
            self._offset[step] = self.journal.next_chunk_no(self.run_id, step) - 1
        return self._offset[step]


def _keep(snap: SnapshotWriter, row: PreparedRow, record_id: int | None) -> None:
    """Into the next snapshot: a row that ended created / updated / unchanged."""
    if row.digest is not None and row.key is not None and record_id is not None:
        snap.add(row.digest, row.key, row.match_by, row.match_value, record_id)


@contextmanager
def open_state(
    pipeline: str,
    path: Path | PgUrl | None,
    run_id: str,
    *,
    full_refresh: bool = False,
    resend_in_doubt: bool = False,
    durable: bool = False,
) -> Iterator[StateHook]:
    """Lock the pipeline, settle a run that died, start ``run_id``; yield the hook.

    ``durable=False`` (WAL, ``synchronous=NORMAL``): a committed chunk survives the process
    being killed; ``durable=True`` also fsyncs every commit, to survive a power cut."""
    from recordsync.state import Journal, StateStore

    store = StateStore(path, durable=durable)
    try:
        with store.pipeline_lock(pipeline):
            journal = Journal(store, pipeline, defer_ledger=True)
            journal.slices = (FOLD_FROM, FOLD_SLICE)
            info, resumed = journal.resume_or_start(run_id)
            if resumed:
                held = journal.settle_in_flight(info.run_id)
                log.warning(
                    "resuming run %s of %s (attempt %d): %d in-flight rows held in doubt",
                    info.run_id,
                    pipeline,
                    info.attempts,
                    len(held),
                )
            hook = StateHook(
                store,
                journal,
                info.run_id,
                pipeline,
                full_refresh=full_refresh,
                resend_in_doubt=resend_in_doubt,
                resumed=resumed,
            )
            if not store.is_postgres:  # SQLite's write-ahead log (PostgreSQL: the server's)
                hook.background = BackgroundCheckpoints(store.path)
            try:
                yield hook
            finally:
                if hook.background is not None:
                    hook.background.close()
    finally:
        store.close()


def _run_started(entry: object) -> float | None:
    """When the run that left ``entry`` in doubt started (its run id begins with the UTC
    start; a resumed run keeps the first attempt's: earlier still)."""
    return first_attempt_started(getattr(entry, "last_run_id", None))


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

"""The run's use of the state store (docs/state.md): lock, change detection, chunk journal.

    with open_state(pipeline, path, run_id) as state:       # lock; settle a dead run; start
        run_plans(..., hook=state)                            # classify / begin / ack per chunk
        state.finish(aborted=...)

- rows are classified in groups of ``sizes.CLASSIFY_ROWS`` as they stream: unchanged rows are
  reported ``unchanged`` and not sent; rows whose last send was in doubt are held as
  ``in_doubt`` again unless resending them is safe (:mod:`recordsync.core.safety`);
- before that, per mapping (``configs``, :mod:`recordsync.nightly.ledger_prep`): declared
  ledger keys, ``ref`` fields resolved from earlier steps' ledgers, and with
  ``match_by_ledger_id`` rows the ledger knows are sent with ``match_by: id``;
- every chunk is journaled before it is sent and acknowledged after; the acknowledged
  outcomes reach the ledger from the journal in key-sorted batches, written a slice with
  each acknowledgement (``sizes.FOLD_FROM``) and the rest at each step's end and the run's
  end (a resumed run folds its dead attempt's);
- when a step's rows are all acknowledged, its mirror deletes run (:meth:`step_done`);
- a run that died (``running`` in the journal) is resumed: its run id is reused, its
  in-flight chunks are settled (safe rows are sent again, the others held ``in_doubt``),
  rows whose outcome it already journaled are reported from the journal and never sent
  again, and chunk numbers continue after its last one.

- at a step's end: the ledger written while the last chunks are in flight, the step's
  reference outcomes, and once every row is acknowledged the step's snapshot committed and
  its mirror deletes run, unless the source may not have been read whole (a malformed line
  that may hide rows, ``StepPrep.mirror_skip``, or a source file that changed since the step
  began reading it, :meth:`StateHook.watch_source`, :mod:`recordsync.read.integrity`).

One class, :class:`StateHook`, implements :class:`recordsync.send.plan.ChunkHook`: the row
side (:meth:`StateHook.source`, :meth:`StateHook.classify`), the chunk side
(:meth:`StateHook.begin`, :meth:`StateHook.ack`) and the end of a step
(:meth:`StateHook.source_read`, :meth:`StateHook.step_done`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from operator import attrgetter, methodcaller
from pathlib import Path
from typing import Any, cast

from recordsync.config.models import MappingConfig
from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import ApiError, AuthError, SourceError
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
from recordsync.nightly.acked_keys import AckedKeysWriter
from recordsync.nightly.incremental import CursorWindow
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.nightly.mirror_step import Deleter, step_mirror_deletes
from recordsync.nightly.pushdown import Pushdown
from recordsync.nightly.ref_lookup import Fetch
from recordsync.nightly.target_check import (
    Adoptable,
    PageReader,
    apply,
    check,
    load_mark,
    read_mark,
    save_mark,
)
from recordsync.read.integrity import Stamp, changes, stamp_source
from recordsync.report.tally import StepTally
from recordsync.state import (
    ChangeDetector,
    Journal,
    StateStore,
    Unchanged,
    ledger_match,
)
from recordsync.state import journal_columns as columns
from recordsync.state.checkpoint import BackgroundCheckpoints
from recordsync.state.journal_content import JournaledRows
from recordsync.state.ledger_rows import LIVE_SQL
from recordsync.state.snapshots import SnapshotWriter, kept_fingerprint, take
from recordsync.state.store import DB_ERRORS
from recordsync.tuning import sizes

log = logging.getLogger(__name__)
_KEPT = frozenset({RowStatus.CREATED, RowStatus.UPDATED})
_status, _record_id = attrgetter("status"), attrgetter("record_id")
_digest, _key = attrgetter("digest"), attrgetter("key")
_match_by, _match_value = attrgetter("match_by"), attrgetter("match_value")
_payload = attrgetter("payload")
_row, _entry = attrgetter("row"), attrgetter("entry")
_encoded, _input_hash = attrgetter("encoded"), attrgetter("input_hash")
_match_by_of, _value_of = methodcaller("get", "match_by"), methodcaller("get", "match_value")
_SAFE_BY = frozenset({"id", "email"})
"""A payload matched by one of these, with a value, is safe to resend as it is."""


@dataclass(frozen=True)
class HookSettings:
    """What a run gives its state hook besides the store: the run's side of the service and
    of its mapping files (a hook built without them reads and writes the store only)."""

    configs: Mapping[str, MappingConfig] = field(default_factory=dict)
    """Mapping configs by step name (ledger keys, references, mirror deletes)."""
    deleter: Deleter | None = None
    lookup: Fetch | None = None
    """Reads the service's records for ``lookup: service`` references."""
    reader: PageReader | None = None
    """Reads the target's list endpoint: the check of what changed there since the last
    run (:mod:`recordsync.nightly.target_check`), and the marks :meth:`StateHook.finish` leaves."""
    notes: list[str] = field(default_factory=list)
    """What the check of the target finds, a line each: the run's report lists them with
    its warnings (the runner reads the list when the run ends)."""
    allow_mass_deletes: bool = False
    mirror_deletes: bool = True
    """False for a partial run (a retry of failed rows): no mirror deletes at all."""
    volume_check: Callable[[StepPlan, int], str | None] | None = None
    """``volume_check(plan, rows_read)`` once a step read its whole source, before its
    mirror deletes: why they are refused (the step's volume guard tripped), or None."""


class StateHook:
    """Implements :class:`recordsync.send.plan.ChunkHook` on a StateStore and a Journal."""

    gates_chunks = True
    """A begun chunk is sent only once the journal holds it as cleared (:meth:`clear`)."""

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
        settings: HookSettings | None = None,
        background: BackgroundCheckpoints | None = None,
    ) -> None:
        settings = settings or HookSettings()
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
        self.configs: Mapping[str, MappingConfig] = settings.configs
        self.deleter: Deleter | None = settings.deleter
        self.lookup: Fetch | None = settings.lookup
        self.allow_mass_deletes = settings.allow_mass_deletes
        self.mirror_deletes = settings.mirror_deletes
        self.volume_check = settings.volume_check
        self._prep: dict[str, StepPrep] = {}
        self._journaled: dict[str, JournaledRows] = {}
        self._snap: SnapshotWriter | None = None
        self._snap_fp = b""
        self.reader: PageReader | None = settings.reader
        self.object_types: set[str] = set()
        self._adoptable: dict[str, Adoptable] = {}
        self.notes: list[str] = settings.notes
        self.background = background
        """Checkpoints of the state database's log while the run writes (stopped before the
        run's final checkpoint, :meth:`finish`)."""
        self._stamps: dict[str, dict[str, Stamp]] | None = None
        """Per step with mirror deletes: its source files' sizes and times as it began."""
        self._push: dict[str, Pushdown] = {}
        """Steps whose change detection runs in the database (:mod:`.pushdown`)."""
        self._windows: dict[str, CursorWindow] = {}
        """Steps read from their cursor (:mod:`.incremental`)."""

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
            f"SELECT source_key, record_id FROM ledger WHERE scope_id = ? AND {LIVE_SQL}"
            f" AND record_id IN ({','.join('?' * len(ask))})",
            (scope, *ask),
        ).fetchall()
        out: dict[int, list[str]] = {}
        for key, rid in rows:
            out.setdefault(int(rid), []).append(str(key))
        return out

    def begin(self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow]) -> None:
        payloads = list(map(_payload, rows))
        if None in payloads:
            payloads = [p or {} for p in payloads]
        if set(map(_match_by_of, payloads)) <= _SAFE_BY and None not in map(_value_of, payloads):
            safe = [True] * len(rows)  # matched by id or e-mail (resend_as_is_safe), at once
        else:
            safe = list(map(resend_as_is_safe, repeat(plan.object_type, len(rows)), payloads))
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
        if len(rows) != len(results):  # before any change: nothing half-acknowledged
            raise ValueError(f"{len(results)} results for a chunk of {len(rows)} rows")
        outcomes = columns.chunk_results(rows, results)
        deque(map(self._hash.pop, map(id, rows), repeat(None)), 0)  # forgotten, in C
        if self._snap is not None:
            _keep_rows(self._snap, rows, results)
        self.journal.ack_chunk(
            self.run_id, plan.name, chunk_no + self._offset.get(plan.name, 0), outcomes
        )

    def atomic(self) -> AbstractContextManager[object]:
        return self.journal.transaction()

    def finish(self, state: str) -> None:
        self._discard_snapshot()
        for push in self._push.values():
            push.close()
        self._push.clear()
        if self.background is not None:
            self.background.close()
        self._leave_marks()
        # the run's outcomes stay in the journal for `recordsync history --key` until the
        # history's retention prunes them (recordsync.state.history)
        self.journal.finish_run(self.run_id, state, keep_rows=True)

    def _leave_marks(self) -> None:
        """For each object type the run wrote: the target's newest ``updated_at`` and count,
        for the next run's check. A mark that cannot be read keeps the last one (the next run
        then sends again the rows this run wrote to: more work, nothing missed)."""
        reader = self.reader
        if reader is None:
            return
        for object_type in sorted(self.object_types):
            try:
                mark = read_mark(reader, object_type)
            except ApiError as exc:
                log.warning("the target's mark of %s could not be read: %s", object_type, exc)
                continue
            with self.store.transaction() as conn:
                save_mark(conn, self.pipeline, object_type, mark, self.run_id)

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

    def source(self, plan: StepPlan) -> Iterable[Item]:
        """The step's rows. A complete, first-attempt run of a whole pipeline digests its
        source rows (:mod:`recordsync.prepare.digests`): rows found in the snapshot of the last
        run come as UnchangedBlocks, and a new snapshot is written as the step goes. The
        step's old snapshot is dropped here in any case, before anything is sent."""
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
        config = self.configs.get(plan.name)
        if whole and config is not None and config.source.incremental is not None:
            window = self._window(plan, config, checked)
            if window is not None:
                return window
        if fp is not None and config is not None and config.source.change_detection == "database":
            pushed = self._pushdown(plan, config, fp, drop)
            if pushed is not None:
                return pushed
        if not drop and fp is not None:
            self._note_stale(plan.name, fp)
        old = take(self.store, self.pipeline, plan.name, None if drop else fp)
        if fp is None or plan.digested is None:
            return plan.rows()
        self._snap = SnapshotWriter(self.store, self.pipeline, plan.name, self.run_id)
        self._snap_fp = fp
        self._snap.source = old
        return plan.digested(old, fp, lambda keys: self._owned(plan, keys), self._snap.marks)

    def _window(
        self, plan: StepPlan, config: MappingConfig, checked: bool
    ) -> Iterable[Item] | None:
        """An incremental pass's rows (:mod:`.incremental`); None for a full check (the
        step then reads its source as without ``incremental``)."""
        if plan.rows_of is None:
            return None
        fp = plan.fingerprint() if plan.fingerprint is not None else None
        made = fp or config.inputs_json().encode()  # ref fields: the config alone
        window = CursorWindow(
            self.store, self.pipeline, plan.name, config, _base_dir(config), made
        )
        force = None
        if self.full_refresh:
            force = "--full-refresh"
        elif checked:
            force = "records were edited or deleted in the target since the last run"
        narrowed = window.decide(force_full=force)
        self._windows[plan.name] = window
        if narrowed is None:
            log.info("step %s: full check of the source: %s", plan.name, window.reason)
            return None
        take(self.store, self.pipeline, plan.name, None)  # no snapshot vouches after it
        return plan.rows_of(narrowed)

    def _pushdown(
        self, plan: StepPlan, config: MappingConfig, fp: bytes, drop: bool
    ) -> Iterable[Item] | None:
        """The step's items with change detection in the database (:mod:`.pushdown`); None
        when the database cannot keep its table (said once, in the report's warnings)."""
        if plan.rows_of is None:
            return None
        directory = self.store.snapshot_dir
        synced = None if directory is None else directory.parent / "synced"
        push = Pushdown(config, self.pipeline, plan.name, _base_dir(config), synced)
        warning = push.open()
        if warning is not None:
            note = f"step {plan.name}: {warning}"
            self.notes.append(note)
            log.warning("%s", note)
            return None
        self._push[plan.name] = push
        pfp = push.fingerprint(fp)
        if not drop:
            self._note_stale(plan.name, pfp)
        old = take(self.store, self.pipeline, plan.name, None if drop else pfp)
        writer = AckedKeysWriter(self.store, self.pipeline, plan.name, self.run_id)
        writer.source = old
        self._snap, self._snap_fp = writer, pfp
        return push.items(plan.rows_of, old, pfp, writer)

    def _note_stale(self, step: str, fp: bytes) -> None:
        """Say so when the step's snapshot was made under another fingerprint: this run
        cannot trust it, maps every row again and compares it with the ledger."""
        kept = kept_fingerprint(self.store, self.pipeline, step)
        if kept is None or kept == fp:
            return
        note = (
            f"step {step}: the mapping, the service's schema, its users or the owners file"
            " changed since the last run: every row is read, mapped again and compared with"
            " the ledger, so this run takes longer (rows whose batch input is the same are"
            " still not sent); the next run is quick again"
        )
        self.notes.append(note)
        log.warning("%s", note)

    def _check_target(self, plan: StepPlan) -> bool:
        """Whether the target changed under the step's ledger since the last run
        (:mod:`recordsync.nightly.target_check`); what was found is in the ledger then, and in
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
        return self.store.owned_keys(self.pipeline, plan.name, keys)

    def _discard_snapshot(self) -> None:
        if self._snap is not None:
            self._snap.discard()
            self._snap = None

    def classify(self, plan: StepPlan, rows: Iterable[Item]) -> Iterator[Item]:
        """``rows`` classified (lazily, a group at a time), flattened in C; ``close()`` ends
        the classification and the rows' stream."""
        return Blocks(self._classified(plan, rows))

    def _classified(self, plan: StepPlan, rows: Iterable[Item]) -> Iterator[list[Item]]:
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
                ledger_shared=rows.ledger_shared if isinstance(rows, Blocks) else None,
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
            if journal.unfolded_rows >= sizes.FOLD_ROWS:
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
            if snap is not None and c.unchanged:
                _keep_unchanged(snap, c.unchanged)
            hashes = self._hash
            adoptable = self._adoptable.get(plan.name)
            to_send = c.to_send
            if adoptable is None and not any(map(_entry, to_send)):
                # new to the ledger, nothing to adopt (a first run): no row to hold or adopt,
                # each row's payload, encoding and hash set in C
                sending = list(map(_row, to_send))
                deque(map(setattr, sending, repeat("payload"), map(_payload, to_send)), 0)
                deque(map(setattr, sending, repeat("encoded"), map(_encoded, to_send)), 0)
                hashes.update(zip(map(id, sending), map(_input_hash, to_send), strict=True))
                to_send = []
            for t in to_send:
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

    def watch_source(self, plan: StepPlan) -> None:
        """The step begins (before any read of its source): with mirror deletes on, note the
        size and modification time of its source files, compared before the deletes."""
        config = self.configs.get(plan.name)
        if config is None or not (self.mirror_deletes and config.mirror_deletes.enabled):
            return
        if self._stamps is None:
            self._stamps = {}
        self._stamps[plan.name] = stamp_source(config.source, _base_dir(config))

    def _changed(self, plan: StepPlan, config: MappingConfig) -> str | None:
        """Why the step's source may not have been read whole: its files changed since the
        step began (:meth:`watch_source`), or cannot be checked now; None when unchanged."""
        before = (self._stamps or {}).pop(plan.name, None)
        if before is None:
            return None
        try:
            now = stamp_source(config.source, _base_dir(config))
        except SourceError as exc:
            return f"the source could not be checked for changes since the step began: {exc}"
        found = changes(before, now)
        if not found:
            return None
        return f"the source changed while the step read it ({'; '.join(found)})"

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
        push = self._push.pop(plan.name, None)
        if push is not None:  # the database's table, before the snapshot vouches for it
            note = push.step_done(plan.name, self._snap)
            if note is not None:
                self.notes.append(note)
                self._discard_snapshot()
        if self._snap is not None:
            self._snap.commit(self._snap_fp)
            self._snap = None
        window = self._windows.pop(plan.name, None)
        if window is not None and not window.full:  # a part of the source: no volume to judge
            tally.window = f"rows with {window.spec.cursor} from {window.since}"
        check = self.volume_check if tally.window is None else None
        guarded = None if check is None else check(plan, tally.read)
        prep = self._prep.get(plan.name)
        if window is not None:
            mirror = prep is not None and prep.seen_keys is not None
            note = window.step_done(self.run_id, mirror)
            if note is not None and prep is not None:  # no deletes from a part of the keys
                self.notes.append(note)
                prep.seen_keys = None
        if prep is None or prep.seen_keys is None:
            return
        step_mirror_deletes(
            self.store,
            self.pipeline,
            plan,
            prep,
            tally,
            guarded=guarded,
            changed=partial(self._changed, plan, prep.config),
            unlimited=self.allow_mass_deletes,
            deleter=self.deleter,
            run_id=self.run_id,
        )

def _keep_rows(snap: SnapshotWriter, rows: list[PreparedRow], results: list[EntryResult]) -> None:
    """Into the next snapshot: the rows of a chunk answered created / updated
    (:func:`keep_row` of each); column-wise when every row is answered so, with its record
    id, digest and key (the common chunk)."""
    rids, digests, keys = (
        list(map(_record_id, results)),
        list(map(_digest, rows)),
        list(map(_key, rows)),
    )
    if (
        _KEPT.issuperset(map(_status, results))
        and None not in rids
        and None not in digests
        and None not in keys
    ):
        snap.add_many(
            digests, keys, list(map(_match_by, rows)), list(map(_match_value, rows)), rids
        )
        return
    for r, res in zip(rows, results, strict=True):
        if res.status in _KEPT:
            keep_row(snap, r, res.record_id)


def _keep_unchanged(snap: SnapshotWriter, unchanged: list[Unchanged]) -> None:
    """Into the next snapshot: the rows found unchanged by the ledger (:func:`keep_row` of
    each, in order), column-wise."""
    rows = list(map(_row, unchanged))
    rids: list[int | None] = [e.record_id for e in map(_entry, unchanged)]
    if None in rids or None in map(_digest, rows) or None in map(_key, rows):
        pairs = [
            (r, rid)
            for r, rid in zip(rows, rids, strict=True)
            if r.digest is not None and r.key is not None and rid is not None
        ]  # the others are not kept
        rows, rids = [r for r, _ in pairs], [rid for _, rid in pairs]
    snap.add_many(
        list(map(_digest, rows)),
        list(map(_key, rows)),
        list(map(_match_by, rows)),
        list(map(_match_value, rows)),
        cast(list[int], rids),
    )


def keep_row(snap: SnapshotWriter, row: PreparedRow, record_id: int | None) -> None:
    """Into the next snapshot: a row that ended created / updated / unchanged."""
    if row.digest is not None and row.key is not None and record_id is not None:
        snap.add(row.digest, row.key, row.match_by, row.match_value, record_id)


def _run_started(entry: object) -> float | None:
    """When the run that left ``entry`` in doubt started (its run id begins with the UTC
    start; a resumed run keeps the first attempt's: earlier still)."""
    return first_attempt_started(getattr(entry, "last_run_id", None))


def _groups(rows: Iterable[Item]) -> Iterator[list[Item]]:
    """``rows`` in groups of about ``sizes.CLASSIFY_ROWS`` rows (see :func:`_next_items`): a
    :class:`Blocks` stream's lists of rows only are cut in slices, never walked row by row."""
    if isinstance(rows, Blocks):
        for items in rows.lists:
            if UnchangedBlock in set(map(type, items)):
                yield from _groups(iter(items))
                continue
            for i in range(0, len(items), sizes.CLASSIFY_ROWS):
                yield items[i : i + sizes.CLASSIFY_ROWS]
        return
    it = iter(rows)
    while items := _next_items(it):
        yield items


def _next_items(it: Iterator[Item]) -> list[Item]:
    """The next items of ``it``, up to ``sizes.CLASSIFY_ROWS`` rows, a block counting its rows
    (a block can be a whole source batch: 500 blocks may be a whole large source)."""
    out: list[Item] = []
    rows = 0
    for item in it:
        out.append(item)
        rows += len(item) if type(item) is UnchangedBlock else 1
        if rows >= sizes.CLASSIFY_ROWS:
            break
    return out


def _base_dir(config: MappingConfig) -> Path:
    """Where the mapping's source path is relative to (the mapping file's directory)."""
    return config.path.parent if config.path is not None else Path.cwd()

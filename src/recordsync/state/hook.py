"""The run's use of the state store (docs/state.md): lock, change detection, chunk journal.

    with open_state(pipeline, path, run_id) as state:       # lock; settle a dead run; start
        run_plans(..., hook=state)                            # classify / begin / ack per chunk
        state.finish(aborted=...)

- rows are classified in groups of :data:`CLASSIFY_ROWS` as they stream: unchanged rows are
  reported ``unchanged`` and not sent; rows whose last send was in doubt are held as
  ``in_doubt`` again unless resending them is safe (:mod:`recordsync.core.safety`);
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

The row side (``source``, ``classify``) lives in :mod:`recordsync.state.hook_rows`, the end of
a step (``source_read``, ``step_done``) in :mod:`recordsync.state.hook_step_end`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

from recordsync.config.models import MappingConfig
from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import ApiError
from recordsync.core.model import PreparedRow, RowStatus, StepPlan
from recordsync.core.safety import resend_as_is_safe
from recordsync.state.checkpoint import BackgroundCheckpoints
from recordsync.state.hook_rows import StepRows, keep_row
from recordsync.state.hook_step_end import StepEnd
from recordsync.state.keyspace import KeySpace, hold_key_spaces
from recordsync.state.ledger_prep import StepPrep
from recordsync.state.target_check import Adoptable, PageReader, read_mark, save_mark

if TYPE_CHECKING:
    from recordsync.state import Journal, StateStore
    from recordsync.state.journal_content import JournaledRows
    from recordsync.state.location import PgUrl
    from recordsync.state.ref_lookup import Fetch
    from recordsync.state.snapshots import SnapshotWriter

Deleter = Callable[[str, int], object]
"""``deleter(object_type, record_id)``: soft-delete one record (already gone is fine)."""

log = logging.getLogger(__name__)
_KEPT = frozenset({RowStatus.CREATED, RowStatus.UPDATED})
_status, _record_id = attrgetter("status"), attrgetter("record_id")
_digest, _key = attrgetter("digest"), attrgetter("key")
_match_by, _match_value = attrgetter("match_by"), attrgetter("match_value")
_payload = attrgetter("payload")
FOLD_FROM = 20_000
FOLD_SLICE = 500
"""The ledger is written while a step runs, :data:`FOLD_SLICE` rows with each acknowledged
chunk, from key-sorted batches of what was acknowledged, a batch once :data:`FOLD_FROM` rows
wait (:attr:`Journal.slices`): at the step's end at most about that many are left to write."""


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
    run (:mod:`recordsync.state.target_check`), and the marks :meth:`StateHook.finish` leaves."""
    notes: list[str] = field(default_factory=list)
    """What the check of the target finds, a line each: the run's report lists them with
    its warnings (the runner reads the list when the run ends)."""
    allow_mass_deletes: bool = False
    mirror_deletes: bool = True
    """False for a partial run (a retry of failed rows): no mirror deletes at all."""


class StateHook(StepRows, StepEnd):
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

        payloads = list(map(_payload, rows))
        if None in payloads:
            payloads = [p or {} for p in payloads]
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
        from recordsync.state import journal_columns as columns

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
        if self.background is not None:
            self.background.close()
        self._leave_marks()
        self.journal.finish_run(self.run_id, state)

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


@contextmanager
def open_state(
    pipeline: str,
    path: Path | PgUrl | None,
    run_id: str,
    *,
    full_refresh: bool = False,
    resend_in_doubt: bool = False,
    durable: bool = False,
    lock_name: str | None = None,
    key_spaces: Sequence[KeySpace] = (),
    wait_for_lock: float = 0.0,
    settings: HookSettings | None = None,
) -> Iterator[StateHook]:
    """Lock the pipeline and its ``key_spaces`` (:mod:`recordsync.state.keyspace`), settle a
    run that died, start ``run_id``; yield the hook. ``wait_for_lock``: seconds to wait for
    a lock another run holds before refusing; ``settings``: the run's side of the hook.

    ``pipeline`` is the state key (:func:`recordsync.state.targets.state_key`: the pipeline
    and its target); ``lock_name`` the pipeline's own name, which the lock is taken under
    (default: ``pipeline``).

    ``durable=False`` (WAL, ``synchronous=NORMAL``): a committed chunk survives the process
    being killed; ``durable=True`` also fsyncs every commit, to survive a power cut."""
    from recordsync.state import Journal, StateStore

    store = StateStore(path, durable=durable)
    try:
        lock_name = lock_name or pipeline
        lock = store.pipeline_lock(lock_name)
        lock.wait = wait_for_lock
        spaces = hold_key_spaces(key_spaces, pipeline=lock_name, store=store, wait=wait_for_lock)
        with lock, spaces:
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
            # SQLite's write-ahead log checkpointed while the run writes (PostgreSQL: the server's)
            background = None if store.is_postgres else BackgroundCheckpoints(store.path)
            try:
                yield StateHook(
                    store,
                    journal,
                    info.run_id,
                    pipeline,
                    full_refresh=full_refresh,
                    resend_in_doubt=resend_in_doubt,
                    resumed=resumed,
                    settings=settings,
                    background=background,
                )
            finally:
                if background is not None:
                    background.close()
    finally:
        store.close()

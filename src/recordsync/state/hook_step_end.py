"""The state hook's end of a step (:class:`StateHook`): the ledger written while the last
chunks are in flight, the step's reference outcomes, and once every row is acknowledged the
step's snapshot committed and its mirror deletes run."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from recordsync.model import StepPlan
from recordsync.report.tally import StepTally
from recordsync.state.ledger_prep import StepPrep
from recordsync.state.store import DB_ERRORS

if TYPE_CHECKING:
    from recordsync.state import Journal, StateStore
    from recordsync.state.hook import Deleter
    from recordsync.state.journal_content import JournaledRows
    from recordsync.state.snapshots import SnapshotWriter

log = logging.getLogger(__name__)


class StepEnd:
    """:class:`recordsync.state.hook.StateHook`'s end of a step (the hook sets the state)."""

    store: StateStore
    journal: Journal
    run_id: str
    pipeline: str
    deleter: Deleter | None
    allow_mass_deletes: bool
    _prep: dict[str, StepPrep]
    _journaled: dict[str, JournaledRows]
    _snap: SnapshotWriter | None
    _snap_fp: bytes

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

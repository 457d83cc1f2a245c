"""The state hook's end of a step (:class:`StateHook`): the ledger written while the last
chunks are in flight, the step's reference outcomes, and once every row is acknowledged the
step's snapshot committed and its mirror deletes run — unless the source may not have been
read whole: a malformed line that may hide rows (``StepPrep.mirror_skip``), or a source file
that changed since the step began reading it (:meth:`StepEnd.watch_source`,
:mod:`recordsync.read.integrity`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.core.model import StepPlan
from recordsync.read.integrity import ENDS_MID_LINE, Stamp, changes, stamp_source
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
    mirror_deletes: bool
    configs: Mapping[str, MappingConfig]
    _prep: dict[str, StepPrep]
    _stamps: dict[str, dict[str, Stamp]] | None = None
    """Per step with mirror deletes: its source files' sizes and times as it began."""
    _journaled: dict[str, JournaledRows]
    _snap: SnapshotWriter | None
    _snap_fp: bytes

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
        changed = self._changed(plan, prep.config)
        why = changed or prep.mirror_skip
        if why is not None:  # unreadable is not absent: rows may hide in it
            cut = changed is not None or ENDS_MID_LINE in why
            fix = (
                "run again once the export is complete (write it under another name and"
                " rename it when done)"
                if cut
                else "fix the line in the source"
            )
            tally.mirror_skipped = (
                f"{why}; rows may be missing from what was read, so no record was deleted: {fix}"
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


def _base_dir(config: MappingConfig) -> Path:
    """Where the mapping's source path is relative to (the mapping file's directory)."""
    return config.path.parent if config.path is not None else Path.cwd()

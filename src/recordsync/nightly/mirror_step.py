"""A step's mirror deletes (docs/state.md, "Mirror deletes"), once its every row is
acknowledged: refused when the step read far fewer rows than its last healthy runs (the
volume guard) or when its source may not have been read whole (a file that changed while it
was read, a malformed line that may hide rows); otherwise planned within the mapping's limits
(:func:`recordsync.state.plan_deletes`) and applied one record at a time."""

from __future__ import annotations

import logging
from collections.abc import Callable

from recordsync.core.model import StepPlan
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.read.integrity import ENDS_MID_LINE
from recordsync.report.tally import StepTally
from recordsync.state import StateStore, apply_deletes, plan_deletes

Deleter = Callable[[str, int], object]
"""``deleter(object_type, record_id)``: soft-delete one record (already gone is fine)."""

log = logging.getLogger(__name__)


def step_mirror_deletes(
    store: StateStore,
    pipeline: str,
    plan: StepPlan,
    prep: StepPrep,
    tally: StepTally,
    *,
    guarded: str | None,
    changed: Callable[[], str | None],
    unlimited: bool,
    deleter: Deleter | None,
    run_id: str,
) -> None:
    """Delete the records of the keys the step's ledger holds and its source no longer has
    (``prep.seen_keys``, then dropped), or say in ``tally`` why none was deleted.
    ``guarded``: why the volume guard refuses them; ``changed()``: why the source may not
    have been read whole (asked only when the guard passed); ``unlimited``: no count or share
    limit (``--allow-mass-deletes``)."""
    seen = prep.seen_keys
    if seen is None:  # the step has no full key set: nothing can be called gone
        return
    if guarded is not None:  # far fewer rows than the last healthy runs: nothing deleted
        tally.mirror_skipped = guarded
        log.warning("step %s: mirror deletes skipped: %s", plan.name, guarded)
        prep.seen_keys = None
        return
    moved = changed()
    why = moved or prep.mirror_skip
    if why is not None:  # unreadable is not absent: rows may hide in it
        cut = moved is not None or ENDS_MID_LINE in why
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
    deletes = plan_deletes(
        store,
        pipeline,
        plan.name,
        seen,
        max_count=None if unlimited else md.max_count,
        max_share=None if unlimited else md.max_share,
    )
    prep.seen_keys = None
    if not deletes.deletes:
        return
    if deleter is None:
        raise RuntimeError("mirror deletes need a deleter (StateHook.deleter)")
    done = apply_deletes(deletes, lambda rid: deleter(plan.object_type, rid), run_id=run_id)
    tally.deleted += len(done.deleted)
    tally.delete_failed += len(done.failed)
    for key, rid, message in done.failed[:20]:
        log.error(
            "mirror delete of %s record %d (key %r) failed: %s", plan.name, rid, key, message
        )

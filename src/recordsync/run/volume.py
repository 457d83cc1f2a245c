"""Source-volume guards: a step's rows compared with the last healthy runs of the same
pipeline, target and mapping (:meth:`recordsync.state.history.RunHistory.baseline`).

A step trips its guard when its source holds no rows where the healthy runs had some, or
fewer than ``(1 - max_drop)`` times their median (``volume_guard.max_drop``, 50% by
default). Then, by the mapping's ``volume_guard.on_drop``:

    skip_deletes   (default) the step runs; its mirror deletes are refused (checked with the
                   exact count of rows read, once the step read its whole source), unless the
                   run is given ``--allow-mass-deletes`` (an empty source is refused anyway)
    skip_step      the step sends nothing: every row is reported not sent, no delete (checked
                   before the step sends: a CSV's lines or a Parquet file's row count; a query
                   source, or a file whose size says nothing, is read once more to count it)

Either way the run exits 1, the report lists the guard under ``guards`` (summary.json) and
"Volume guards" (report.md), and an alert is raised (``notify:``). A step with no healthy
run to compare with (the first runs, a new mapping, a new target) is not guarded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from recordsync.config.models import MappingConfig
from recordsync.core.errors import VolumeDropped
from recordsync.core.model import StepPlan, UnchangedBlock
from recordsync.state.history import median_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    """A guard that tripped (``summary.json``'s ``guards``)."""

    step: str
    kind: str
    """``empty`` (no rows where there were rows) or ``drop`` (beyond ``max_drop``)."""
    previous: int
    """The median rows read by the step in its last healthy runs."""
    current: int
    threshold: float
    """``max_drop`` (a share)."""
    action: str
    """``skip_step``, ``skip_deletes``, or ``alert`` (no mirror deletes to refuse)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kind": self.kind,
            "previous": self.previous,
            "current": self.current,
            "threshold": self.threshold,
            "action": self.action,
        }

    @property
    def reason(self) -> str:
        what = (
            "the source has no rows"
            if self.kind == "empty"
            else f"the source has {self.current} rows"
        )
        did = {
            "skip_step": "the step sent nothing and deleted nothing",
            "skip_deletes": "its mirror deletes were refused",
            "alert": "the step ran (no mirror deletes were refused)",
        }[self.action]
        return (
            f"volume guard of step {self.step}: {what}, against {self.previous} in the last"
            f" healthy runs (more than {self.threshold:.0%} fewer); {did}. Check the export;"
            " if the drop is real, run again: each run that trips the guard is not a baseline,"
            " so raise volume_guard.max_drop or set volume_guard.enabled: false for one run"
        )


def _count(plan: StepPlan) -> int:
    """The step's source rows before it sends: its estimate (a CSV's lines, a Parquet
    file's metadata), else counted by reading the source once."""
    if plan.estimate is not None:
        estimate = plan.estimate()
        if estimate is not None:
            return estimate
    n = 0
    items: Iterable[object] = plan.rows()
    for item in items:
        n += len(item) if isinstance(item, UnchangedBlock) else 1
    return n


class VolumeGuards:
    """The volume guards of one run: each step's mapping (``configs``) and the rows it read
    in the last healthy runs (``baselines``, newest first; empty: not guarded)."""

    def __init__(
        self,
        configs: Mapping[str, MappingConfig],
        baselines: Mapping[str, list[int]],
        *,
        mirror_deletes: bool = True,
        allow_mass_deletes: bool = False,
    ) -> None:
        self.configs = configs
        self.baselines = baselines
        self.mirror_deletes = mirror_deletes
        self.allow_mass_deletes = allow_mass_deletes
        """``--allow-mass-deletes``: the deletes go ahead (the drop is still reported)."""
        self.outcomes: list[GuardOutcome] = []

    def _check(self, step: str, current: int, action: str | None = None) -> GuardOutcome | None:
        config = self.configs.get(step)
        counts = self.baselines.get(step) or []
        if config is None or not config.volume_guard.enabled or not counts:
            return None
        guard = config.volume_guard
        previous = median_of(counts)
        if previous <= 0:
            return None
        if current == 0:
            kind = "empty"
        elif current < previous * (1 - guard.drop):
            kind = "drop"
        else:
            return None
        if action is None:
            deletes = self.mirror_deletes and config.mirror_deletes.enabled
            action = "skip_deletes" if deletes and not self.allow_mass_deletes else "alert"
        outcome = GuardOutcome(step, kind, previous, current, guard.drop, action)
        self.outcomes.append(outcome)
        log.warning("%s", outcome.reason)
        return outcome

    def before_step(self, plan: StepPlan) -> VolumeDropped | None:
        """The error to drain the step with (``on_drop: skip_step`` and a drop), or None."""
        config = self.configs.get(plan.name)
        if config is None or config.volume_guard.on_drop != "skip_step":
            return None
        if not config.volume_guard.enabled or not self.baselines.get(plan.name):
            return None
        outcome = self._check(plan.name, _count(plan), "skip_step")
        return None if outcome is None else VolumeDropped(outcome.reason)

    def after_read(self, plan: StepPlan, rows_read: int) -> str | None:
        """The step read its whole source (``rows_read`` rows), before its mirror deletes:
        the reason to refuse them, or None (no drop; no deletes to refuse; deletes allowed by
        ``--allow-mass-deletes``). A step already skipped is not checked again."""
        if any(o.step == plan.name for o in self.outcomes):
            return None
        outcome = self._check(plan.name, rows_read)
        return outcome.reason if outcome is not None and outcome.action == "skip_deletes" else None

    def tripped(self, step: str) -> bool:
        return any(o.step == step for o in self.outcomes)

    def as_json(self) -> list[dict[str, Any]]:
        return [o.as_json() for o in self.outcomes]

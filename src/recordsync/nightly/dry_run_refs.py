"""A dry run's references: :class:`DryRunRefsHook` does what
:class:`recordsync.nightly.ledger_prep.StepPrep` does in a run, against a
:class:`recordsync.nightly.refs.RunLedger` (the state store's ledger if there is one, plus the
rows earlier steps of the dry run found valid), so that it predicts which rows the real run
fails for a missing reference. Without the state store (``--no-state``) a ``ref`` field is
refused up front (:func:`refuse_refs_without_state`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from recordsync.config.loader import mapping_line
from recordsync.config.models import MappingConfig
from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import ConfigError
from recordsync.core.model import Blocks, PreparedRow, RowStatus, StepPlan
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.nightly.ref_lookup import Fetch
from recordsync.nightly.refs import RunLedger
from recordsync.report.tally import StepTally
from recordsync.tuning import sizes


def refuse_refs_without_state(steps: Iterable[tuple[str, MappingConfig]]) -> None:
    """``--no-state`` and a ``ref`` field: a configuration error before anything is sent
    (without the ledger the reference could not be resolved: the field would be dropped)."""
    for name, cfg in steps:
        for fname, spec in cfg.fields.items():
            if spec.ref is not None:
                raise ConfigError(
                    f"step '{name}': field '{fname}' refers to step '{spec.ref.mapping}', and "
                    "ref fields are resolved from the state store, which --no-state turns off",
                    file=cfg.label,
                    line=mapping_line(cfg, "fields", fname),
                    key=f"fields.{fname}.ref",
                    hint="run without --no-state, or remove the ref",
                )


def referenced_steps(configs: Iterable[MappingConfig]) -> set[str]:
    """The steps some mapping's ``ref`` field refers to."""
    return {f.ref.mapping for c in configs for f in c.fields.values() if f.ref is not None}


class DryRunRefsHook:
    """A :class:`recordsync.send.step.ChunkHook` for a dry run: declared ledger keys and
    references as :class:`StepPrep` does in the real run, looked up in ``ledger`` (the state
    store's ledger, if any, plus the rows earlier steps of this dry run found valid: the real
    run would send them). Sends nothing, so ``begin``/``ack`` never happen."""

    def __init__(
        self,
        ledger: RunLedger,
        pipeline: str,
        configs: Mapping[str, MappingConfig],
        lookup: Fetch | None = None,
    ) -> None:
        self.lookup = lookup
        """Reads the service's records for ``lookup: service`` references (reads only)."""
        self.ledger = ledger
        self.pipeline = pipeline
        self.configs = configs
        self.referenced = referenced_steps(configs.values())
        """Steps some ``ref`` refers to: only their valid rows' keys are kept."""
        self._prep: dict[str, StepPrep] = {}

    gates_chunks = False
    """Nothing is journaled: :meth:`clear` is never called."""

    def source(self, plan: StepPlan) -> Iterable[PreparedRow]:
        return plan.rows()

    def classify(self, plan: StepPlan, rows: Iterable[Any]) -> Iterator[PreparedRow]:
        config = self.configs.get(plan.name)
        prep = None
        if config is not None:
            prep = StepPrep(
                self.ledger,
                self.pipeline,
                plan.name,
                config,
                self.configs,
                mirror=False,
                lookup=self.lookup,
                ledger_shared=rows.ledger_shared if isinstance(rows, Blocks) else None,
            )
            self._prep[plan.name] = prep
        it = iter(rows)
        while group := list(itertools.islice(it, sizes.PREP_ROWS)):
            if prep is not None and prep.active:
                prep.apply(group)
            if plan.name in self.referenced:
                self.ledger.plan(
                    plan.name,
                    (r.key for r in group if r.status is RowStatus.VALID and r.key is not None),
                )
            yield from group

    def record_id_of(self, row: PreparedRow) -> int | None:
        return None

    def begin(self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow]) -> None:
        raise AssertionError("a dry run sends nothing")

    def ack(
        self, plan: StepPlan, chunk_no: int, rows: list[PreparedRow], results: list[EntryResult]
    ) -> None:
        raise AssertionError("a dry run sends nothing")

    def clear(self, plan: StepPlan, chunk_nos: list[int]) -> None:
        raise AssertionError("a dry run sends nothing")

    def other_owners(
        self, plan: StepPlan, pairs: list[tuple[str | None, int]]
    ) -> dict[int, list[str]]:
        return {}  # nothing is answered in a dry run

    def source_read(self, plan: StepPlan) -> None:
        pass

    def step_done(self, plan: StepPlan, tally: StepTally) -> None:
        pass

    def ref_counts(self, step: str) -> dict[str, dict[str, Any]]:
        """The step's reference outcomes (:meth:`StepPrep.ref_counts`), once it has run."""
        prep = self._prep.pop(step, None)
        return prep.ref_counts() if prep is not None else {}

    def atomic(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def attempts(self) -> int:
        return 1

    def chunks_before(self, step: str) -> int:
        return 0

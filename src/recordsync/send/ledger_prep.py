"""Per-step row work that needs the state store, done as rows stream (before change
detection, so that a resolved reference is part of the hashed input):

- the declared ledger key (``ledger_key``) replaces the match key as ``row.key`` (a row whose
  key column is blank keeps its match key); a key seen earlier in the step makes the later
  row ``duplicate`` (the first row wins: the stream cannot look ahead);
- ``ref`` fields get the referenced mapping's record id from its ledger, or fail the row
  (``invalid``, with the mapping and the key in the reason), or are left out (``unset``);
- the source keys of every row (any status) are collected for mirror deletes;
- a row predicted to merge into another row's record whose own key already has a record
  in the ledger is sent after all (it updates its own record, by id or its match key).

In a dry run, :class:`DryRunRefsHook` does the same against a
:class:`recordsync.state.refs.RunLedger` (the state store's ledger if there is one, plus the
rows earlier steps of the dry run found valid), so that it predicts which rows the real run
fails for a missing reference. Without the state store (``--no-state``) a ``ref`` field is
refused up front (:func:`refuse_refs_without_state`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from recordsync.config.models import MappingConfig
from recordsync.errors import ConfigError, RowError
from recordsync.model import PreparedRow, RowStatus
from recordsync.prepare_merges import needed
from recordsync.state.keys import cell_text, ledger_key_of, reference_normalizer

if TYPE_CHECKING:
    from recordsync.reconcile.batch import EntryResult
    from recordsync.report.tally import StepTally
    from recordsync.send.step import StepPlan
    from recordsync.state import ReferenceResolver
    from recordsync.state.refs import Ledger, RunLedger

PREP_ROWS = 500


class StepPrep:
    """The ledger-dependent preparation of one step's rows."""

    def __init__(
        self,
        store: Ledger,
        pipeline: str,
        step: str,
        config: MappingConfig,
        configs: Mapping[str, MappingConfig],
        *,
        mirror: bool = True,
    ) -> None:
        from recordsync.state import ReferenceResolver

        self.config = config
        self._seen: set[int] = set()
        self._first: dict[int, int] = {}
        collect = mirror and config.mirror_deletes.enabled
        self.seen_keys: list[str] | None = [] if collect else None
        self.refs: list[tuple[str, str, ReferenceResolver]] = []
        for fname, spec in config.fields.items():
            if spec.ref is None:
                continue
            target = configs.get(spec.ref.mapping)
            if target is None:
                raise ConfigError(
                    f"fields.{fname}.ref: no step '{spec.ref.mapping}' in this pipeline",
                    file=config.label,
                    key=f"fields.{fname}.ref.mapping",
                    hint=f"steps: {', '.join(configs)}",
                )
            assert spec.column is not None
            resolver = ReferenceResolver(
                store,
                pipeline,
                spec.ref.mapping,
                on_missing=spec.ref.on_missing,
                normalize=reference_normalizer(target),
                column=fname,
            )
            self.refs.append((fname, spec.column, resolver))
        self._ledger = (store, pipeline, step)
        self._held_merges = needed(config) is not None
        self.active = bool(
            config.ledger_key or self.refs or self.seen_keys is not None or self._held_merges
        )

    def apply(self, group: list[PreparedRow]) -> None:
        if self.config.ledger_key is not None:
            self._ledger_keys(group)
        if self._held_merges:
            self._release_owners(group)
        if self.seen_keys is not None:
            self.seen_keys.extend(r.key for r in group if r.key is not None)
        for fname, column, resolver in self.refs:
            valid = [r for r in group if r.status is RowStatus.VALID and r.payload is not None]
            resolver.prefetch(cell_text(r.source.values.get(column)) for r in valid)
            for r in valid:
                assert r.payload is not None
                try:
                    rid = resolver.resolve(cell_text(r.source.values.get(column)))
                except RowError as exc:
                    r.status, r.error = RowStatus.INVALID, exc.message
                    continue
                fields = r.payload.setdefault("fields", {})
                if rid is None:
                    fields.pop(fname, None)
                else:
                    fields[fname] = rid

    def _release_owners(self, group: list[PreparedRow]) -> None:
        """Rows predicted to merge (:mod:`recordsync.prepare_merges`) whose key already has a
        record of its own in the ledger: sent to that record (by id, or by their match key),
        they are not folded into another: they are sent as usual."""
        held = [r for r in group if r.status is RowStatus.MERGED and r.key is not None]
        if not held:
            return
        store, pipeline, step = self._ledger
        found = store.lookup_many(pipeline, step, [r.key for r in held if r.key is not None])
        by_id = self.config.match_by_ledger_id
        for r in held:
            entry = found.get(r.key or "")
            if entry is None or entry.record_id is None or entry.last_status == "deleted":
                continue
            if by_id or (r.payload or {}).get("match_by") is not None:
                r.status, r.error = RowStatus.VALID, None

    def _ledger_keys(self, group: list[PreparedRow]) -> None:
        cfg = self.config
        assert cfg.ledger_key is not None
        column = cfg.ledger_key.column
        for r in group:
            key = ledger_key_of(cfg, r.source.values)
            if key is None:  # blank: the row keeps its match key (``name:...``), if any
                continue
            r.key = key
            if r.status is not RowStatus.VALID:
                continue
            h = hash(key)
            if h in self._seen:
                first = self._first.get(h)
                where = f"row {first}" if first is not None else "an earlier row"
                r.status = RowStatus.DUPLICATE
                r.error = (
                    f"duplicate ledger key {key!r} (column '{column}'): {where} has the same"
                    " key and wins (ledger keys must be unique in the source)"
                )
                continue
            self._seen.add(h)
            if len(self._first) < 100_000:
                self._first[h] = r.source.source_row


def refuse_refs_without_state(steps: Iterable[tuple[str, MappingConfig]]) -> None:
    """``--no-state`` and a ``ref`` field: a configuration error before anything is sent
    (without the ledger the reference could not be resolved: the field would be dropped)."""
    from recordsync.config.loader import mapping_line

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
        self, ledger: RunLedger, pipeline: str, configs: Mapping[str, MappingConfig]
    ) -> None:
        self.ledger = ledger
        self.pipeline = pipeline
        self.configs = configs
        self.referenced = referenced_steps(configs.values())
        """Steps some ``ref`` refers to: only their valid rows' keys are kept."""

    def source(self, plan: StepPlan) -> Iterable[PreparedRow]:
        return plan.rows()

    def classify(self, plan: StepPlan, rows: Iterable[Any]) -> Iterator[PreparedRow]:
        config = self.configs.get(plan.name)
        prep = None
        if config is not None:
            prep = StepPrep(
                self.ledger, self.pipeline, plan.name, config, self.configs, mirror=False
            )
        it = iter(rows)
        while group := list(itertools.islice(it, PREP_ROWS)):
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

    def source_read(self, plan: StepPlan) -> None:
        pass

    def step_done(self, plan: StepPlan, tally: StepTally) -> None:
        pass

    def atomic(self) -> AbstractContextManager[Any]:
        return nullcontext()

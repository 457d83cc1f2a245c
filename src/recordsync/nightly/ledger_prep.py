"""Per-step row work that needs the state store, done as rows stream (before change
detection, so that a resolved reference is part of the hashed input):

- the declared ledger key (``ledger_key``) replaces the match key as ``row.key`` (a row whose
  key column is blank keeps its match key); a key seen earlier in the step makes the later
  row ``duplicate`` (the first row wins: the stream cannot look ahead);
- ``ref`` fields get the referenced mapping's record id from its ledger (found by its
  ledger key, or with ``ref.by`` through a field or column of its rows,
  :mod:`recordsync.nightly.ref_index`), or fail the row (``invalid``, with the mapping and the
  key in the reason), or are left out (``unset``); each field's outcomes are counted
  (:meth:`StepPrep.ref_counts`, the step's ``references`` in summary.json);
- the source keys of every row (any status) are collected for mirror deletes, with every key
  a malformed line may hold (:mod:`recordsync.prepare.salvage`); a line that may hide rows or
  whose key cannot be read sets :attr:`StepPrep.mirror_skip` (the step deletes nothing);
- a row predicted to merge into another row's record whose own key already has a record
  in the ledger is sent after all (it updates its own record, by id or its match key).

A dry run does the same through :mod:`recordsync.nightly.dry_run_refs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recordsync.config.models import MappingConfig
from recordsync.core.errors import ConfigError, RowError
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.ref_index import RefIndex
from recordsync.nightly.ref_lookup import Fetch, ServiceLookup
from recordsync.nightly.refs import Ledger, ReferenceResolver
from recordsync.prepare.merges import needed
from recordsync.state.keys import cell_text, ledger_key_of, ledger_keys_of, reference_normalizer
from recordsync.tuning.seen_hashes import SeenHashes
from recordsync.tuning.spill import KeySpool


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
        lookup: Fetch | None = None,
        ledger_shared: frozenset[int] | None = None,
    ) -> None:
        self.config = config
        self._seen = SeenHashes()
        """Hash of each ledger key sent so far, on disk past a block
        (:mod:`recordsync.tuning.seen_hashes`); only when ``ledger_shared`` is not known."""
        self._shared = ledger_shared
        """The ledger-key hashes two rows or more of the step's stream may share (the
        duplicate scan's, :attr:`recordsync.core.model.Blocks.ledger_shared`), or None: a key
        whose hash is not in it cannot come again, and is not remembered."""
        self._first: dict[int, int] = {}
        """Hash of a key sent → its first row, for the first 100,000 keys sent (with
        ``ledger_shared``: of its keys only, -1 past the first 100,000 keys)."""
        self._kept = 0
        collect = mirror and config.mirror_deletes.enabled
        self.seen_keys: KeySpool | None = KeySpool() if collect else None
        self.mirror_skip: str | None = None
        """Why the step's mirror deletes are skipped (the first malformed line that may hide
        rows or a key), or None."""
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
            index = service = None
            if spec.ref.by is not None:
                base = target.path.parent if target.path is not None else Path.cwd()
                index = RefIndex(spec.ref, target, base)
                if spec.ref.lookup == "service" and lookup is not None:
                    field = spec.ref.by.field
                    assert field is not None  # the model requires a field for lookup: service
                    service = ServiceLookup(lookup, target.object_type, field, index.normalize)
            resolver = ReferenceResolver(
                store,
                pipeline,
                spec.ref.mapping,
                on_missing=spec.ref.on_missing,
                normalize=reference_normalizer(target),
                column=fname,
                index=index,
                service=service,
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
            for r in group:
                if r.salvage is not None:
                    self._salvaged(r)
                elif r.key is None and r.status is RowStatus.INVALID and not self.mirror_skip:
                    self._unkeyed(r)
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

    def ref_counts(self) -> dict[str, dict[str, Any]]:
        """Per ``ref`` field: how it looks up (``by``, ``on_missing``) and its outcomes."""
        out: dict[str, dict[str, Any]] = {}
        for fname, _, resolver in self.refs:
            spec = self.config.fields[fname].ref
            assert spec is not None
            by = spec.by.label if spec.by is not None else "ledger key"
            out[fname] = {
                "step": spec.mapping,
                "by": by,
                "on_missing": spec.on_missing,
                **resolver.counts,
            }
        return out

    def _salvaged(self, row: PreparedRow) -> None:
        """The keys a malformed line may hold count as present; one that may hide rows, or
        whose key cannot be read at all, skips the step's mirror deletes."""
        assert row.salvage is not None and self.seen_keys is not None
        salvage, cfg = row.salvage, self.config
        keys: list[str | None] = list(salvage.keys)
        if cfg.ledger_key is not None:
            for i, values in enumerate(salvage.alignments):
                keys[i] = ledger_key_of(cfg, values) or keys[i]
        found = [k for k in keys if k]
        self.seen_keys.extend(found)
        if self.mirror_skip is not None:
            return
        if salvage.hides is not None:
            self.mirror_skip = salvage.hides
        elif not found and (cfg.match_by or cfg.ledger_key is not None):
            self.mirror_skip = (
                f"line {row.source.source_row}: malformed, and its key cannot be read"
            )

    def _unkeyed(self, row: PreparedRow) -> None:
        """An invalid row without a key, though a key column holds a value: the key it had
        cannot be told, so its record cannot be kept by key; the step's deletes are skipped."""
        cfg = self.config
        cols = [r.column for r in cfg.match_by if r.column]
        for rule in cfg.match_by:
            if rule.column is None and rule.by == "name":
                cols += cfg.name.columns
            elif rule.column is None and rule.by in cfg.fields:
                cols += cfg.fields[rule.by].columns
        if cfg.ledger_key is not None:
            cols.append(cfg.ledger_key.column)
        values = row.source.values
        if any(cell_text(values.get(c)) for c in cols):
            self.mirror_skip = (
                f"line {row.source.source_row}: invalid, and its key cannot be read ({row.error})"
            )

    def _release_owners(self, group: list[PreparedRow]) -> None:
        """Rows predicted to merge (:mod:`recordsync.prepare.merges`) whose key already has a
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
        keys = ledger_keys_of(cfg, SourceRow.cells([r.source for r in group], column))
        if self._shared is not None:
            self._shared_keys(group, keys)
            return
        seen, first = self._seen, self._first
        known = seen.found(hash(k) for k in keys if k is not None)
        for r, key in zip(group, keys, strict=True):
            if key is None:  # blank: the row keeps its match key (``name:...``), if any
                continue
            r.key = key
            if r.status is not RowStatus.VALID:
                continue
            h = hash(key)
            if h in known:
                _duplicate(r, key, column, first.get(h, -1))
                continue
            known.add(h)
            if self._kept < 100_000:
                first[h] = r.source.source_row
            self._kept += 1
            seen.add(h)

    def _shared_keys(self, group: list[PreparedRow], keys: list[str | None]) -> None:
        """:meth:`_ledger_keys` when the keys two rows may share are known: only those are
        remembered (the same rows come out duplicate, with the same reasons)."""
        shared, first = self._shared, self._first
        assert shared is not None and self.config.ledger_key is not None
        column = self.config.ledger_key.column
        valid = RowStatus.VALID
        for r, key in zip(group, keys, strict=True):
            if key is None:  # blank: the row keeps its match key (``name:...``), if any
                continue
            r.key = key
            if r.status is not valid:
                continue
            h = hash(key)
            if h in shared:
                at = first.get(h)
                if at is not None:
                    _duplicate(r, key, column, at)
                    continue
                first[h] = r.source.source_row if self._kept < 100_000 else -1
            self._kept += 1


def _duplicate(row: PreparedRow, key: str, column: str, first: int) -> None:
    """``row`` is a duplicate of the row ``first`` (-1: an earlier row past the first 100,000
    keys), whose ledger key ``key`` it has."""
    where = f"row {first}" if first >= 0 else "an earlier row"
    row.status = RowStatus.DUPLICATE
    row.error = (
        f"duplicate ledger key {key!r} (column '{column}'): {where} has the same key and wins"
        " (ledger keys must be unique in the source)"
    )

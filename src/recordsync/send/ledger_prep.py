"""Per-step row work that needs the state store, done as rows stream (before change
detection, so that a resolved reference is part of the hashed input):

- the declared ledger key (``ledger_key``) replaces the match key as ``row.key`` (a row whose
  key column is blank keeps its match key); a key seen earlier in the step makes the later
  row ``duplicate`` (the first row wins: the stream cannot look ahead);
- ``ref`` fields get the referenced mapping's record id from its ledger, or fail the row
  (``invalid``, with the mapping and the key in the reason), or are left out (``unset``);
- the source keys of every row (any status) are collected for mirror deletes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from recordsync.config.models import MappingConfig
from recordsync.errors import ConfigError, RowError
from recordsync.model import PreparedRow, RowStatus
from recordsync.state.keys import cell_text, ledger_key_of, reference_normalizer

if TYPE_CHECKING:
    from recordsync.state import ReferenceResolver, StateStore


class StepPrep:
    """The ledger-dependent preparation of one step's rows."""

    def __init__(
        self,
        store: StateStore,
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
        self.active = bool(config.ledger_key or self.refs or self.seen_keys is not None)

    def apply(self, group: list[PreparedRow]) -> None:
        if self.config.ledger_key is not None:
            self._ledger_keys(group)
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

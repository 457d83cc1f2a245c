"""The merge scan of ``prepare_step`` (:mod:`.merge_rules`): one more pass over the
source of a contacts or companies step that maps only the fields the service deduplicates on
(name, ``email``, ``domain``, ``linkedin_url``), then simulates the service's dedup in source
order. The rows it finds folding into another row's record are held as ``merged`` by the
second pass. Rows that a duplicate rule or a mapping error keeps from being sent take no part;
rows that already have a record of their own (``owners``: found in the last run's snapshot)
claim their keys first and never fold.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recordsync.config.models import MappingConfig
from recordsync.map.engine import BatchMapper
from recordsync.map.gcpause import gc_paused
from recordsync.prepare.dups import ROW_BITS, Duplicates, ledger_keys, where
from recordsync.prepare.merge_rules import (
    RULES,
    Kind,
    creates,
    dedup_keys,
    kind_of,
    merge_error,
    predict,
)
from recordsync.read import iter_source
from recordsync.validate.schema import Schema

DEDUP_FIELDS = ("email", "domain", "linkedin_url")

Owned = Callable[[list[str]], set[str]]
"""``owned(keys)``: the source keys that have a record of their own in the ledger."""


class MergeScan:
    """Row identity → (the row whose record it folds into, the rule), for one source."""

    def __init__(self, kind: Kind, hits: dict[int, tuple[int, int]], files: list[str]) -> None:
        self.kind = kind
        self.hits = hits
        self.files = files
        self._ids = np.array(sorted(hits), dtype=np.int64)

    def held(self, ids: npt.NDArray[np.int64]) -> list[int]:
        """Positions ``i`` of the identities ``ids[i]`` that fold into another row's record."""
        if not len(self._ids):
            return []
        return np.flatnonzero(np.isin(ids, self._ids)).tolist()

    def error(self, rid: int, fidx: int, payload: dict[str, Any] | None) -> str:
        """The reason for row ``rid`` (its own key under the rule, from its batch input)."""
        target, j = self.hits[rid]
        key = dedup_keys(self.kind, payload)[j] if payload else None
        return merge_error(RULES[self.kind][j], key, where(target, fidx, self.files))


def needed(mapping: MappingConfig) -> Kind | None:
    """The kind to scan for, or None: not a deduplicated type, merges declared expected, or
    contacts whose match key already is the e-mail (duplicates then cover it)."""
    kind = kind_of(mapping.object_type)
    if kind is None or mapping.merges == "expected":
        return None
    if kind == "contacts":
        rules = mapping.match_by
        if "email" not in mapping.fields and not any(r.by == "email" for r in rules):
            return None
        if (
            rules
            and rules[0].by == "email"
            and rules[0].column is None
            and mapping.ledger_key is None
        ):
            return None
    return kind


def scan_merges(
    mapping: MappingConfig,
    *,
    base_dir: Path,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    dups: Duplicates | None,
    owners: npt.NDArray[np.int64] | None = None,
    owned: Owned | None = None,
) -> MergeScan | None:
    """Predict the rows that fold into another row's record (None: nothing to predict).
    ``owners``: identities of rows with a record of their own; ``owned``: asked which of the
    other rows' keys have one in the ledger (those rows claim their keys first too)."""
    kind = needed(mapping)
    if kind is None:
        return None
    fields = {k: v for k, v in mapping.fields.items() if k in DEDUP_FIELDS and v.ref is None}
    sub = mapping.model_copy(update={"fields": fields, "owner": None, "profile_image_url": None})
    mapper = BatchMapper(sub, base_dir=base_dir, schema=schema, users=users)
    losers = dups.losers(mapping.duplicates) if dups is not None else set()
    is_owner = set(owners.tolist()) if owners is not None else set()
    files: dict[str, int] = {}
    rows: list[tuple[int, bool, list[int | None]]] = []
    first: list[tuple[int, list[int | None]]] = []
    for sb in iter_source(mapping.source, base_dir, sub.source_columns()):
        fidx = files.setdefault(sb.file, len(files))
        with gc_paused():
            mb = mapper.map_batch(sb.batch)
        rids = ((np.int64(fidx) << ROW_BITS) | sb.rows).tolist()
        keys: list[str | None] = list(mb.keys)
        have: set[str] = set()
        if owned is not None:
            if mapping.ledger_key is not None:  # the row's ledger key, where it has one
                keys = [lk or k for lk, k in zip(ledger_keys(mapping, sb.batch), keys, strict=True)]
            have = owned([k for k, r in zip(keys, rids, strict=True) if k and r not in is_owner])
        for rid, key, payload, err in zip(rids, keys, mb.payloads, mb.errors, strict=True):
            if err is not None or rid in losers:
                continue
            hashes = [hash(k) if k is not None else None for k in dedup_keys(kind, payload)]
            if rid in is_owner or key in have:
                first.append((rid, hashes))
            else:
                rows.append((rid, creates(payload), hashes))
    return MergeScan(kind, predict(kind, rows, first), list(files))

"""The merge scan of ``prepare_step`` (:mod:`.merge_rules`): one more pass over the
source of a contacts or companies step that maps only the fields the service deduplicates on
(name, ``email``, ``domain``, ``linkedin_url``), then simulates the service's dedup in source
order. The rows it finds folding into another row's record are held as ``merged`` by the
second pass. Rows that a duplicate rule or a mapping error keeps from being sent take no part;
rows that already have a record of their own (``owners``: found in the last run's snapshot)
claim their keys first and never fold.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from recordsync.config.models import MappingConfig
from recordsync.map.engine import BatchMapper
from recordsync.prepare.dups import ROW_BITS, Duplicates, HashRuns, ledger_keys, where
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
from recordsync.tuning import sizes
from recordsync.tuning.gcpause import gc_paused
from recordsync.validate.schema import Schema

DEDUP_FIELDS = ("email", "domain", "linkedin_url")


Owned = Callable[[list[str]], set[str]]
"""``owned(keys)``: the source keys that have a record of their own in the ledger."""

Owners = Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]]
"""``owners(ids)``: per row identity of a batch, whether the row has a record of its own
(found in the last run's snapshot: :class:`recordsync.prepare.owners.SnapshotOwners`); asked
batch by batch in source order."""


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
    owners: Owners | None = None,
    owned: Owned | None = None,
) -> MergeScan | None:
    """Predict the rows that fold into another row's record (None: nothing to predict).
    ``owners``: which rows have a record of their own; ``owned``: asked which of the
    other rows' keys have one in the ledger (those rows claim their keys first too)."""
    kind = needed(mapping)
    if kind is None:
        return None
    fields = {k: v for k, v in mapping.fields.items() if k in DEDUP_FIELDS and v.ref is None}
    sub = mapping.model_copy(update={"fields": fields, "owner": None, "profile_image_url": None})
    mapper = BatchMapper(sub, base_dir=base_dir, schema=schema, users=users)
    losers = dups.losers(mapping.duplicates) if dups is not None else set()
    files: dict[str, int] = {}
    keyed = _Keyed(len(RULES[kind]))
    for sb in iter_source(mapping.source, base_dir, sub.source_columns()):
        fidx = files.setdefault(sb.file, len(files))
        with gc_paused():
            mb = mapper.map_batch(sb.batch)
        ids = (np.int64(fidx) << ROW_BITS) | sb.rows
        rids = ids.tolist()
        is_owner = (
            owners(ids) if owners is not None else np.zeros(len(ids), dtype=bool)
        ).tolist()
        keys: list[str | None] = list(mb.keys)
        have: set[str] = set()
        if owned is not None:
            if mapping.ledger_key is not None:  # the row's ledger key, where it has one
                keys = [lk or k for lk, k in zip(ledger_keys(mapping, sb.batch), keys, strict=True)]
            others = zip(keys, is_owner, strict=True)
            have = owned([k for k, o in others if k and not o])
        batch: list[tuple[int, bool, bool, list[int | None]]] = []
        for rid, own, key, payload, err in zip(
            rids, is_owner, keys, mb.payloads, mb.errors, strict=True
        ):
            if err is not None or rid in losers:
                continue
            hashes = [hash(k) if k is not None else None for k in dedup_keys(kind, payload)]
            batch.append((rid, own or key in have, creates(payload), hashes))
        keyed.add(batch)
    return MergeScan(kind, predict(kind, *keyed.sharing()), list(files))


class _Keyed:
    """The rows the merge scan simulates, in source order: identity, whether it has a record
    of its own, whether it may create, and its key hash under each rule. Held in memory up to
    ``sizes.MERGE_SPILL_ROWS`` rows, then appended to a temporary file; each rule's hashes also
    go to a :class:`HashRuns`, so that only the rows sharing a key with another row (the only ones
    that can fold or be folded into) are simulated: the same answers, without every row."""

    def __init__(self, rules: int) -> None:
        self.rules = rules
        self.runs = [HashRuns() for _ in range(rules)]
        self._blocks: list[tuple[npt.NDArray[Any], ...]] = []
        self._held = 0
        self._file: IO[bytes] | None = None
        self._spilled = 0

    def add(self, batch: list[tuple[int, bool, bool, list[int | None]]]) -> None:
        if not batch:
            return
        n = self.rules
        rid = np.fromiter((b[0] for b in batch), np.int64, len(batch))
        flags = np.fromiter((b[1] | b[2] << 1 for b in batch), np.int64, len(batch))
        cells = [h for b in batch for h in b[3]]
        has = np.fromiter((h is not None for h in cells), bool, len(cells)).reshape(-1, n)
        hashes = np.fromiter((h or 0 for h in cells), np.int64, len(cells)).reshape(-1, n)
        for j in range(n):
            self.runs[j].add(hashes[has[:, j], j], rid[has[:, j]])
        self._blocks.append((rid, flags, hashes, has))
        self._held += len(batch)
        if self._held >= sizes.MERGE_SPILL_ROWS:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="recordsync-merges-")  # noqa: SIM115
            for block in self._blocks:
                for a in block:
                    np.save(self._file, a)
            self._spilled += len(self._blocks)
            self._blocks, self._held = [], 0

    def __del__(self) -> None:  # a scan that failed part-way: its file is closed at once
        if self._file is not None:
            self._file.close()

    def _all(self) -> Iterator[tuple[npt.NDArray[Any], ...]]:
        if self._file is not None:
            self._file.seek(0)
            for _ in range(self._spilled):
                yield tuple(np.load(self._file) for _ in range(4))
            self._file.close()
            self._file = None
        yield from self._blocks

    def sharing(
        self,
    ) -> tuple[list[tuple[int, bool, list[int | None]]], list[tuple[int, list[int | None]]]]:
        """:func:`recordsync.merges.predict`'s rows and owners, of the rows that share a
        key hash under some rule with another row."""
        shared = [np.sort(np.fromiter(r.shared(), np.int64)) for r in self.runs]
        rows: list[tuple[int, bool, list[int | None]]] = []
        first: list[tuple[int, list[int | None]]] = []
        for rid, flags, hashes, has in self._all():
            keep = np.zeros(len(rid), dtype=bool)
            for j in range(self.rules):
                keep |= has[:, j] & _member(hashes[:, j], shared[j])
            for i in np.flatnonzero(keep).tolist():
                marked = zip(hashes[i].tolist(), has[i].tolist(), strict=True)
                keys: list[int | None] = [h if m else None for h, m in marked]
                if flags[i] & 1:
                    first.append((int(rid[i]), keys))
                else:
                    rows.append((int(rid[i]), bool(flags[i] & 2), keys))
        self._blocks = []
        return rows, first


def _member(values: npt.NDArray[np.int64], ordered: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which ``values`` are in ``ordered`` (sorted): a binary search each, no sort of both."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return np.asarray(ordered[at] == values)

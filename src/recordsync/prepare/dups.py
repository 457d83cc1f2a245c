"""Duplicate keys of one source (the first pass of :func:`recordsync.prepare.prepare_step`):
rows grouped by the hash of their match key, and, for a mapping with a ``ledger_key``, of
their normalised ledger key; the ``duplicates`` policy (first, last, fail) picks the row of a
group that is sent."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.config.models import MappingConfig
from recordsync.map.engine import BatchMapper
from recordsync.read import iter_source
from recordsync.state.keys import ledger_keys_of
from recordsync.tuning import sizes
from recordsync.tuning.gcpause import gc_paused

ROW_BITS = 40  # row identity = file index << 40 | row number


class Duplicates:
    """Rows sharing a key hash: hash → row identities in source order. A mapping with a
    ``ledger_key`` also groups the rows that share a (normalised) ledger key; a row in both
    kinds of group is in one group, the union (``ledger``: the hashes of groups holding a
    ledger-key group)."""

    def __init__(
        self,
        groups: dict[int, list[int]],
        files: list[str] | None = None,
        ledger: frozenset[int] = frozenset(),
        ledger_keys: frozenset[int] | None = None,
    ) -> None:
        self.groups = groups
        self.files = files or []
        self.ledger = ledger
        self.ledger_keys = ledger_keys
        """The ledger-key hashes two rows or more of the scan share (before groups were
        joined); None: not known."""
        self._members: tuple[npt.NDArray[np.int64], list[list[int]]] | None = None
        self._by_ledger = {id(g) for h, g in groups.items() if h in ledger}

    def where(self, rid: int, fidx: int) -> str:
        """'row N', plus the file's name when it is another file of the source."""
        return where(rid, fidx, self.files)

    def by_ledger_key(self, group: list[int]) -> bool:
        return id(group) in self._by_ledger

    def losers(self, policy: str) -> set[int]:
        """Every grouped row that ``policy`` (first, last, fail) does not send."""
        out: set[int] = set()
        for g in self.groups.values():
            keep = winner(g, policy)
            out.update(r for r in g if r != keep)
        return out

    def groups_of(self, ids: npt.NDArray[np.int64]) -> Iterator[tuple[int, list[int]]]:
        """``(i, group)`` for each row identity ``ids[i]`` that is in a group, found by its
        identity (the first pass already hashed its key: the second pass does not again)."""
        if self._members is None:  # every grouped identity, sorted, and its group
            pairs = sorted((rid, g) for g in self.groups.values() for rid in g)
            members = np.fromiter((rid for rid, _ in pairs), np.int64, len(pairs))
            self._members = (members, [g for _, g in pairs])
        members, owners = self._members
        if not len(members) or not len(ids):
            return
        at = np.minimum(np.searchsorted(members, ids), len(members) - 1)
        hit = members[at] == ids
        for i, k in zip(np.flatnonzero(hit).tolist(), at[hit].tolist(), strict=True):
            yield i, owners[k]

    @classmethod
    def combined(
        cls,
        groups: dict[int, list[int]],
        ledger_groups: dict[int, list[int]],
        files: list[str],
    ) -> Duplicates:
        """Match-key groups and ledger-key groups, overlapping ones joined."""
        shared = frozenset(ledger_groups)
        if not ledger_groups:
            return cls(groups, files, ledger_keys=shared)
        parent: dict[int, int] = {}

        def root(r: int) -> int:
            while parent.setdefault(r, r) != r:
                r = parent[r]
            return r

        for g in [*groups.values(), *ledger_groups.values()]:
            for r in g[1:]:
                a, b = root(g[0]), root(r)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        by_root: dict[int, int] = {}  # root → the hash its joined group is kept under
        out: dict[int, list[int]] = {}
        ledger: set[int] = set()
        for is_ledger, source in ((True, ledger_groups), (False, groups)):
            for h, g in source.items():
                key = by_root.setdefault(root(g[0]), h)
                out.setdefault(key, []).extend(g)
                if is_ledger:
                    ledger.add(key)
        return cls(
            {h: sorted(set(g)) for h, g in out.items()}, files, frozenset(ledger), shared
        )

    @classmethod
    def scan(cls, mapper: BatchMapper, mapping: MappingConfig, base_dir: Path) -> Duplicates:
        files: dict[str, int] = {}
        keys, ledger = HashRuns(), HashRuns()
        columns = mapping.key_columns()
        if mapping.ledger_key is not None:
            columns = [*columns, mapping.ledger_key.column]
        for sb in iter_source(mapping.source, base_dir, columns):
            fidx = files.setdefault(sb.file, len(files))
            rids = (np.int64(fidx) << ROW_BITS) | sb.rows
            if mapping.match_by:
                with gc_paused():
                    h, has = mapper.key_hashes(sb.batch)
                keys.add(h[has], rids[has])
            if mapping.ledger_key is not None:
                h, has = text_hashes(ledger_keys(mapping, sb.batch))
                ledger.add(h, rids[has])
        return cls.combined(keys.shared(), ledger.shared(), list(files))


def where(rid: int, fidx: int, files: list[str]) -> str:
    """'row N' of row identity ``rid``, plus the file's name when it is not file ``fidx``."""
    row = f"row {rid & ((1 << ROW_BITS) - 1)}"
    other = rid >> ROW_BITS
    if other != fidx and other < len(files):
        return f"{row} of {Path(files[other]).name}"
    return row


def winner(group: list[int], policy: str) -> int | None:
    """The row of a duplicate group that is sent: the first, the last, or none (fail)."""
    if policy == "fail":
        return None
    return group[0] if policy == "first" else group[-1]


def text_hashes(keys: list[str | None]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Python hashes of the keys that are there (within one process), and which are."""
    has = np.fromiter((k is not None for k in keys), bool, len(keys))
    present = [k for k in keys if k is not None]
    return np.fromiter(map(hash, present), dtype=np.int64, count=len(present)), has


def ledger_keys(mapping: MappingConfig, batch: pa.RecordBatch) -> list[str | None]:
    """Each row's declared ledger key, normalised (None where the cell is blank)."""
    spec = mapping.ledger_key
    assert spec is not None
    return ledger_keys_of(mapping, batch.column(spec.column).to_pylist())


def shared_hashes(
    hashes: list[npt.NDArray[np.int64]], ids: list[npt.NDArray[np.int64]]
) -> dict[int, list[int]]:
    """hash → row identities, in source order, of every hash that two rows or more share."""
    if not hashes:
        return {}
    h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
    order = np.lexsort((id_all, h_all))
    hs = h_all[order]
    dup = np.zeros(len(hs), dtype=bool)
    same = hs[1:] == hs[:-1]
    dup[1:] |= same
    dup[:-1] |= same
    groups: dict[int, list[int]] = {}
    for hv, rid in zip(hs[dup].tolist(), id_all[order][dup].tolist(), strict=True):
        groups.setdefault(hv, []).append(rid)
    return groups


class HashRuns:
    """The (hash, row identity) pairs of one scan, for :func:`shared_hashes`, in memory up to
    ``sizes.DUPLICATE_SPILL_ROWS`` pairs. Past that, every pair is appended to one of
    2 ** ``sizes.DUPLICATE_PARTITION_BITS`` files in a temporary directory, by the hash's top
    bits (so that the partitions, in order, hold ascending hash ranges), and the groups are
    found one partition at a time: the same groups, in the same order, as from all the pairs
    at once."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or sizes.DUPLICATE_SPILL_ROWS
        self._hashes: list[npt.NDArray[np.int64]] = []
        self._ids: list[npt.NDArray[np.int64]] = []
        self._held = 0
        self.added = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def spilled(self) -> bool:
        return self._dir is not None

    def add(self, hashes: npt.NDArray[np.int64], ids: npt.NDArray[np.int64]) -> None:
        self._hashes.append(hashes)
        self._ids.append(ids)
        self._held += len(hashes)
        self.added += len(hashes)
        if self._held >= self.limit:
            self._spill()

    def _spill(self) -> None:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="recordsync-hashes-")
        h = np.concatenate(self._hashes).astype(np.int64, copy=False)
        ids = np.concatenate(self._ids).astype(np.int64, copy=False)
        self._hashes, self._ids, self._held = [], [], 0
        part = (h >> (64 - sizes.DUPLICATE_PARTITION_BITS)) + (
            1 << (sizes.DUPLICATE_PARTITION_BITS - 1)
        )  # signed: in order
        order = np.argsort(part, kind="stable")
        bounds = np.searchsorted(part[order], np.arange((1 << sizes.DUPLICATE_PARTITION_BITS) + 1))
        pairs = np.column_stack((h[order], ids[order]))
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            with open(Path(self._dir.name) / f"{p}.bin", "ab") as f:
                pairs[bounds[p] : bounds[p + 1]].tofile(f)

    def __del__(self) -> None:  # a scan that failed part-way: its files go at once
        if self._dir is not None:
            self._dir.cleanup()

    def shared(self) -> dict[int, list[int]]:
        """hash → row identities, in source order, of every hash two pairs or more share."""
        if self._dir is None:
            return shared_hashes(self._hashes, self._ids)
        if self._held:
            self._spill()
        groups: dict[int, list[int]] = {}
        try:
            for p in range(1 << sizes.DUPLICATE_PARTITION_BITS):
                path = Path(self._dir.name) / f"{p}.bin"
                if path.exists():
                    pairs = np.fromfile(path, dtype=np.int64).reshape(-1, 2)
                    groups.update(shared_hashes([pairs[:, 0]], [pairs[:, 1]]))
        finally:
            self._dir.cleanup()
            self._dir = None
        return groups

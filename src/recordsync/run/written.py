"""What a run wrote, as it streams: per step, a uniform sample of the records it wrote and of
the rows it found unchanged (for the read-back, :mod:`recordsync.run.verify`), and the first
record ids it created or updated (for the skill triggered after the run,
:mod:`recordsync.run.after_run`).

:class:`WrittenRecords` is the step runner's :class:`recordsync.send.plan.RowObserver`. Its
cost is a few microseconds a chunk: the reservoirs skip ahead (Li's algorithm L: a random
number per row *taken*, not per row seen), and a sampled record another row of the step
writes later takes that row's values on top (the record holds the last write), so that a
sample never expects values another row of the same step replaced.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import Item, PreparedRow, RowStatus, UnchangedBlock, values_of
from recordsync.run.reservoir import Reservoir

MAX_CHANGED_IDS = 1000
"""Record ids kept for the skill's payload, in all (the first ones, in run order)."""

_WRITTEN = (RowStatus.CREATED, RowStatus.UPDATED)


@dataclass(slots=True)
class Sampled:
    """One row whose record is to be read back: what was sent (``payload``: its batch input;
    None for a row found unchanged from its digest, whose ``cells`` are mapped again)."""

    step: str
    source_file: str
    source_row: int
    status: str
    """``created``, ``updated`` or ``unchanged``."""
    record_id: int
    payload: dict[str, Any] | None = None
    cells: Any = None
    """A row found unchanged from its digest (never mapped): its cells, a one-row Arrow
    batch, mapped when it is read back."""
    later: list[dict[str, Any]] = field(default_factory=list)
    """Batch inputs other rows of the step sent to the same record afterwards."""
    at: tuple[int, int] = (0, 0)
    """Where the row was seen: (chunk, position among the chunk's items)."""


class WrittenRecords:
    """Watches every settled chunk of a run (:class:`recordsync.send.plan.RowObserver`)."""

    def __init__(
        self, sizes: dict[str, int], *, shared: set[str] | None = None, seed: int | None = None
    ) -> None:
        """``sizes``: per step, how many records to read back (half written, half
        unchanged; steps not named: none). ``shared``: steps whose rows may share a record
        (``merges: expected``): every record id they answer or find is kept, so that a row
        found unchanged whose record another row of the step also holds is not compared
        (which of them wrote it last is not known)."""
        self._track = {s for s in (shared or set()) if sizes.get(s)}
        self._ids: dict[str, list[list[int]]] = {s: [] for s in self._track}
        self.shared_skipped: dict[str, int] = {}
        """Per step: rows found unchanged left out of the sample, their record shared."""
        rng = self._rng = random.Random(seed)
        self._written: dict[str, Reservoir[Sampled]] = {
            s: Reservoir(n, rng) for s, n in sizes.items()
        }
        self._unchanged: dict[str, Reservoir[Sampled]] = {
            s: Reservoir(n, rng) for s, n in sizes.items()
        }
        self._sampled: dict[str, dict[int, list[Sampled]]] = {s: {} for s in sizes}
        """Per step, record id → the sampled rows of that record."""
        self._chunk = 0
        self.sizes = sizes
        self.changed: dict[str, dict[str, list[int]]] = {}
        """Per step: ``created`` and ``updated`` record ids (at most MAX_CHANGED_IDS in all)."""
        self.kept = 0

    # -- the observer --------------------------------------------------------------------
    def settled(
        self,
        step: str,
        rows: list[Item],
        results: list[EntryResult],
        record_id_of: Callable[[PreparedRow], int | None] | None,
    ) -> None:
        if results and self.kept < MAX_CHANGED_IDS:
            self._keep_ids(step, results)
        written = self._written.get(step)
        if written is None:
            return
        sampled = self._sampled[step]
        self._chunk += 1
        if step in self._track:
            self._ids[step].append(_ids_of(rows, results, record_id_of))
        unchanged = self._unchanged[step]
        if unchanged.size and record_id_of is not None:
            self._offer_unchanged(step, rows, unchanged, sampled, record_id_of)
        if not results:
            return
        ok = [i for i, r in enumerate(results) if r.status in _WRITTEN and r.record_id is not None]
        picks = written.wants(len(ok))
        if not picks and (not sampled or sampled.keys().isdisjoint(r.record_id for r in results)):
            return
        valid = [j for j, r in enumerate(rows) if _is_valid(r)]
        for p in picks:
            i = ok[p]
            row, result = rows[valid[i]], results[i]
            assert isinstance(row, PreparedRow) and result.record_id is not None
            src = row.source
            item = Sampled(
                step,
                src.source_file,
                src.source_row,
                result.status.value,
                result.record_id,
                row.payload,
                at=(self._chunk, valid[i]),
            )
            self._put(written, sampled, item)
        self._overlay(sampled, rows, results, valid)

    def _keep_ids(self, step: str, results: list[EntryResult]) -> None:
        lists = self.changed.setdefault(step, {"created": [], "updated": []})
        for r in results:
            if r.status in _WRITTEN and r.record_id is not None:
                lists[r.status.value].append(r.record_id)
                self.kept += 1
                if self.kept >= MAX_CHANGED_IDS:
                    return

    def _overlay(
        self,
        sampled: dict[int, list[Sampled]],
        rows: list[Item],
        results: list[EntryResult],
        valid: list[int],
    ) -> None:
        """Rows of this chunk written to a sampled record after its sampled row: their
        values are on top of that row's."""
        for j, result in zip(valid, results, strict=False):
            hits = sampled.get(result.record_id) if result.record_id is not None else None
            row = rows[j]
            if not hits or result.status not in _WRITTEN or not isinstance(row, PreparedRow):
                continue
            for hit in hits:
                if hit.at < (self._chunk, j) and row.payload is not None:
                    hit.later.append(row.payload)

    def _offer_unchanged(
        self,
        step: str,
        rows: list[Item],
        reservoir: Reservoir[Sampled],
        sampled: dict[int, list[Sampled]],
        record_id_of: Callable[[PreparedRow], int | None],
    ) -> None:
        for j, item in enumerate(rows):
            if type(item) is UnchangedBlock:
                cells = item.cells  # rows the first pass sampled, with their cells
                if not cells:
                    continue
                lines = sorted(cells)
                picks = reservoir.wants(len(lines))
                if not picks:
                    continue
                positions = np.searchsorted(np.asarray(item.source_rows), lines).tolist()
                rids = values_of(item.record_ids)
                for i in picks:
                    rid = rids[positions[i]]
                    if rid is None:
                        continue
                    self._put(
                        reservoir,
                        sampled,
                        Sampled(
                            step,
                            item.source_file,
                            lines[i],
                            "unchanged",
                            int(rid),
                            cells=cells[lines[i]],
                            at=(self._chunk, j),
                        ),
                    )
            elif type(item) is PreparedRow and item.status is RowStatus.UNCHANGED:
                if not reservoir.wants(1):
                    continue
                rid = record_id_of(item)
                if rid is not None and item.payload is not None:
                    src = item.source
                    self._put(
                        reservoir,
                        sampled,
                        Sampled(
                            step,
                            src.source_file,
                            src.source_row,
                            "unchanged",
                            rid,
                            item.payload,
                            at=(self._chunk, j),
                        ),
                    )

    @staticmethod
    def _put(
        reservoir: Reservoir[Sampled], sampled: dict[int, list[Sampled]], item: Sampled
    ) -> None:
        old = reservoir.take(item)
        if old is not None:
            kept = [s for s in sampled.get(old.record_id, []) if s is not old]
            if kept:
                sampled[old.record_id] = kept
            else:
                sampled.pop(old.record_id, None)
        sampled.setdefault(item.record_id, []).append(item)

    # -- after the step ------------------------------------------------------------------
    def sample(self, step: str) -> list[Sampled]:
        """The step's sample: up to its size, half from each kind, the rest from the other
        when one kind has fewer; one entry per record (the first row that wrote it)."""
        size = self.sizes.get(step, 0)
        if not size:
            return []
        written = self._written[step].items
        unchanged = self._unchanged[step].items
        take_w = min(len(written), max(size - len(unchanged), size - size // 2))
        if step in self._track:
            unchanged = self._alone(step, unchanged)
        take_u = min(len(unchanged), size - take_w)
        chosen = self._rng.sample(written, take_w) + self._rng.sample(unchanged, take_u)
        seen: set[int] = set()
        out: list[Sampled] = []
        for s in chosen:
            if s.record_id not in seen:
                seen.add(s.record_id)
                out.append(s)
        return sorted(out, key=lambda s: (s.source_file, s.source_row))

    def _alone(self, step: str, unchanged: list[Sampled]) -> list[Sampled]:
        """``unchanged`` without rows whose record another row of the step also holds."""
        held = Counter(rid for ids in self._ids.pop(step, []) for rid in ids)
        alone = [s for s in unchanged if held[s.record_id] <= 1]
        self.shared_skipped[step] = len(unchanged) - len(alone)
        return alone

    def forget(self, step: str) -> None:
        """Let the step's sample go (it was read back)."""
        for store in (self._written, self._unchanged):
            if step in store:
                store[step].items = []
        self._sampled.pop(step, None)


def _ids_of(
    rows: list[Item],
    results: list[EntryResult],
    record_id_of: Callable[[PreparedRow], int | None] | None,
) -> list[int]:
    """Every record id a chunk's rows were answered with or found holding."""
    out = [r.record_id for r in results if r.record_id is not None]
    for item in rows:
        if type(item) is UnchangedBlock:
            out += [rid for rid in values_of(item.record_ids) if rid is not None]
        elif type(item) is PreparedRow and item.status is RowStatus.UNCHANGED and record_id_of:
            rid = record_id_of(item)
            if rid is not None:
                out.append(rid)
    return out


def _is_valid(item: Item) -> bool:
    return type(item) is PreparedRow and item.status is RowStatus.VALID

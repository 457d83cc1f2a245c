"""The match keys of the rows a step with change detection in the database did not read
(:mod:`.pushdown`): a row read from the diff whose match key (``email:ann@x.io``,
``name:Acme``) is an unchanged row's would be written onto that row's record, so it is held
``merged`` instead of sent (a type the service deduplicates, ``merges: hold``).

Nothing is kept per unchanged row: for each list of rows read (a few thousand), the
snapshot is read once, a record batch at a time, and its unchanged rows whose match key is
one of the list's are found by an Arrow set look-up (no Python object per snapshot row).
The memory is the list's keys and one batch of the snapshot's, whatever the snapshot's
size; a list without a row to check reads nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.core.model import PreparedRow, RowStatus
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.state.snapshots import Snapshot


class Claims:
    """The unchanged rows' match keys (snapshot rows ``pos``)."""

    def __init__(self, snapshot: Snapshot, pos: UnchangedRows) -> None:
        self.snapshot = snapshot
        self.pos = pos
        self.scans = 0
        """How many times the snapshot was read."""

    def owners(self, match_keys: Sequence[str]) -> dict[str, str]:
        """Per match key of ``match_keys`` that an unchanged row has: the ledger key of the
        first such row (in snapshot order)."""
        if not match_keys or not len(self.pos):
            return {}
        value_set = pa.array(sorted(set(match_keys)), pa.string())
        found: dict[str, str] = {}
        self.scans += 1
        for start, keys, ledger in self.snapshot.match_key_batches():
            hit = pc.fill_null(pc.is_in(keys, value_set=value_set), False)
            mask: np.ndarray[Any, Any] = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
            if not mask.any():
                continue
            mask &= self.pos.mask(start, len(mask))
            at = pa.array(np.flatnonzero(mask))
            for mk, key in zip(keys.take(at).to_pylist(), ledger.take(at).to_pylist(), strict=True):
                found.setdefault(mk, key)
            if len(found) == len(value_set):
                break
        return found

    def owner(self, match_key: str) -> str | None:
        """The ledger key of the first unchanged row whose match key is ``match_key``, or
        None."""
        return self.owners([match_key]).get(match_key)

    def hold(self, rows: Sequence[PreparedRow]) -> None:
        """Hold as ``merged`` each valid row of ``rows`` whose match key an unchanged row
        has."""
        asked = [
            (r, f"{r.match_by}:{r.match_value}")
            for r in rows
            if r.status is RowStatus.VALID and r.match_by is not None and r.match_value is not None
        ]
        if not asked:
            return
        owners = self.owners([mk for _, mk in asked])
        for row, match_key in asked:
            key = owners.get(match_key)
            if key is None:
                continue
            row.status = RowStatus.MERGED
            row.error = (
                f"merges with the row of key {key!r}, unchanged in the database: the service"
                f" would write it onto that row's record (both match by {match_key!r}); not"
                " sent, so that it does not overwrite it. Make the rows differ, or declare"
                " `merges: expected` in the mapping"
            )

"""The match keys of the rows a step with change detection in the database did not read
(:mod:`.pushdown`): a row read from the diff whose match key (``email:ann@x.io``,
``name:Acme``) is an unchanged row's would be written onto that row's record, so it is held
``merged`` instead of sent (a type the service deduplicates, ``merges: hold``).

Nothing is kept in memory per unchanged row. The keys of the first lists of rows read that
have a row to check are sought by reading the snapshot, a record batch at a time
(:data:`SCANS_BEFORE_INDEX` reads); then the snapshot is read once more and the digest of each
unchanged row's match key (XXH3-128, as source rows are digested) is sorted on disk with its
snapshot row (:class:`recordsync.state.digest_runs.SortedDigests`: 24 bytes a row on disk,
a fence of 16 kB per million rows in memory). Each list's keys are then looked up there, a
few pages read each, whatever the snapshot's size; reading the snapshot for every list
instead costs 0.3 s of CPU a list at 3M rows, and a 1%-changed nightly run of 10M rows reads
some fifty lists. A match key that more than one unchanged row has (rare: such rows are
merges) is looked up by one read of the snapshot, to name the first of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.core.model import PreparedRow, RowStatus
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.state.digest_runs import SortedDigests
from recordsync.state.digests import row_digests
from recordsync.state.snapshots import Snapshot
from recordsync.tuning.native_memory import give_back

SCANS_BEFORE_INDEX = 4
"""Lists whose keys are sought by reading the snapshot before the index is made: making it
costs about as much CPU as four reads (1.0 s against 0.1 s a read at 1M rows), so a small
diff (up to a few thousand rows) never pays for it; a large one reads the snapshot five
times, not once per list (3M rows, 30 lists of 2,048 keys: 3.4 s of CPU against 9.1 s)."""

_SALT = b"recordsync-match-key-index\n"
"""Salts the match keys' digests (any constant: both sides of a look-up use it)."""


class Claims:
    """The unchanged rows' match keys (snapshot rows ``pos``)."""

    def __init__(self, snapshot: Snapshot, pos: UnchangedRows) -> None:
        self.snapshot = snapshot
        self.pos = pos
        self.scans = 0
        """How many times the snapshot was read."""
        self._index: SortedDigests | None = None
        """The unchanged rows' match-key digests, sorted on disk (made when first needed)."""

    def owners(self, match_keys: Sequence[str]) -> dict[str, str]:
        """Per match key of ``match_keys`` that an unchanged row has: the ledger key of the
        first such row (in snapshot order)."""
        if not match_keys or not len(self.pos):
            return {}
        asked = sorted(set(match_keys))
        if self._index is None and self.scans < SCANS_BEFORE_INDEX:
            return self._scan(asked)
        if self._index is None:
            self.scans += 1
            self._index = SortedDigests(self._digests(), self.snapshot.release, len(self.snapshot))
        d = _key_digests(asked)
        rows = self._index.find(d[:, 0], d[:, 1])
        hit = np.flatnonzero(rows >= 0)
        if not len(hit):
            return {}
        at = rows[hit]
        twice = np.isin(at, self._index.twice)  # another row has the key too: the first?
        once = ~twice
        found: dict[str, str] = {}
        if once.any():
            ledger = self.snapshot.column("key", at[once])
            found.update(zip([asked[i] for i in hit[once].tolist()], ledger, strict=True))
        if twice.any():
            found.update(self._scan([asked[i] for i in hit[twice].tolist()]))
        return found

    def _digests(self) -> Iterator[pa.RecordBatch]:
        """Per snapshot batch, the digests of its rows' match keys (``d0``, ``d1``): an
        unchanged row's, or for any other row (a changed one, one without a match key) a
        value no key's digest takes (0, its row)."""
        for start, keys, _ in self.snapshot.match_key_batches():
            n = len(keys)
            d = np.empty((n, 2), dtype=np.uint64)
            d[:, 0] = 0
            d[:, 1] = np.arange(start, start + n, dtype=np.uint64)
            use = self.pos.mask(start, n) & np.asarray(keys.is_valid(), bool)
            if use.any():
                where = np.flatnonzero(use)
                d[where] = _key_digests(keys.take(pa.array(where)))
            give_back()  # the batch's key texts and digests, freed
            yield pa.record_batch({"d0": d[:, 0], "d1": d[:, 1]})

    def _scan(self, match_keys: Sequence[str]) -> dict[str, str]:
        """:meth:`owners` of ``match_keys`` by one read of the snapshot."""
        value_set = pa.array(sorted(set(match_keys)), pa.string())
        found: dict[str, str] = {}
        self.scans += 1
        for start, keys, ledger in self.snapshot.match_key_batches():
            hit = pc.fill_null(pc.is_in(keys, value_set=value_set), False)
            mask: np.ndarray[Any, Any] = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
            del hit
            give_back()  # the batch's match keys, freed (glibc keeps them otherwise)
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


def _key_digests(keys: Sequence[str] | pa.Array) -> np.ndarray[Any, Any]:
    """The XXH3-128 digest of each match key (two 64-bit halves a row)."""
    arr = keys.cast(pa.string()) if isinstance(keys, pa.Array) else pa.array(keys, pa.string())
    got = row_digests(pa.record_batch({"k": arr}), ["k"], _SALT)
    assert got is not None  # text digests
    return got[0]

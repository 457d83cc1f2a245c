"""The match keys of the rows a step with change detection in the database did not read
(:mod:`.pushdown`): a row read from the diff whose match key (``email:ann@x.io``,
``name:Acme``) is an unchanged row's would be written onto that row's record, so it is held
``merged`` instead of sent (a type the service deduplicates, ``merges: hold``). Looked up by
32-bit hashes of the unchanged rows' match keys, made a slice of the snapshot at a time when
the first row is asked for (never every key's text at once: 8 bytes a row in all), each hit
confirmed on the key's text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow.compute as pc

from recordsync.core.model import PreparedRow, RowStatus
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.state.snapshots import Snapshot
from recordsync.tuning.sizes import SNAPSHOT_FLUSH_ROWS

_MASK = 0xFFFFFFFF


class Claims:
    """The unchanged rows' match keys (snapshot rows ``pos``)."""

    def __init__(self, snapshot: Snapshot, pos: UnchangedRows) -> None:
        self.snapshot = snapshot
        self.pos = pos
        self._index: np.ndarray[Any, Any] | None = None

    def _make_index(self) -> np.ndarray[Any, Any]:
        """The unchanged rows' match keys, each as one 64-bit number (its 32-bit hash above
        its snapshot row), sorted in place: 8 bytes a row at the peak (a hash array, a row
        array and their argsort held about 28 bytes a row: 10M unchanged rows, ~280 MB)."""
        if len(self.snapshot) > _MASK:
            raise ValueError("a snapshot of more than 2**32 rows")
        index = np.empty(len(self.pos), dtype=np.uint64)
        filled = 0
        for at in self.pos.blocks(SNAPSHOT_FLUSH_ROWS):
            got = self.snapshot.take(at, ["match_by", "match_value"])
            keys = pc.binary_join_element_wise(
                got.column("match_by"), got.column("match_value"), ":"
            )
            listed = keys.to_pylist()
            has = np.fromiter((k is not None for k in listed), bool, len(listed))
            n = int(has.sum())
            hashes = np.fromiter(
                (hash(k) & _MASK for k in listed if k is not None), np.uint64, n
            )
            index[filled : filled + n] = (hashes << np.uint64(32)) | at[has].astype(np.uint64)
            filled += n
        index = index[:filled]
        index.sort()
        return index

    def owner(self, match_key: str) -> str | None:
        """The ledger key of the unchanged row whose match key is ``match_key``, or None.
        The index is made at the first row asked for (an unchanged run asks for none)."""
        if self._index is None:
            self._index = self._make_index()
        index = self._index
        h = int(hash(match_key) & _MASK)
        i = int(np.searchsorted(index, np.uint64(h << 32)))
        while i < len(index) and int(index[i]) >> 32 == h:
            row = int(index[i]) & _MASK
            i += 1
            got = self.snapshot.take(
                np.array([row], dtype=np.int64), ["match_by", "match_value", "key"]
            )
            by, value, key = (got.column(n)[0].as_py() for n in ("match_by", "match_value", "key"))
            if f"{by}:{value}" == match_key:
                return str(key)
        return None

    def hold(self, row: PreparedRow) -> None:
        """Hold ``row`` as ``merged`` when an unchanged row has its match key."""
        if row.match_by is None or row.match_value is None:
            return
        match_key = f"{row.match_by}:{row.match_value}"
        key = self.owner(match_key)
        if key is None:
            return
        row.status = RowStatus.MERGED
        row.error = (
            f"merges with the row of key {key!r}, unchanged in the database: the service would"
            f" write it onto that row's record (both match by {match_key!r}); not sent, so that"
            " it does not overwrite it. Make the rows differ, or declare `merges: expected` in"
            " the mapping"
        )

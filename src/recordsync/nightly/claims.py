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
from recordsync.state.snapshots import Snapshot
from recordsync.tuning.sizes import SNAPSHOT_FLUSH_ROWS

_MASK = 0xFFFFFFFF


class Claims:
    """The unchanged rows' match keys (snapshot rows ``pos``)."""

    def __init__(self, snapshot: Snapshot, pos: np.ndarray[Any, Any]) -> None:
        self.snapshot = snapshot
        self.pos = pos
        self._index: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None

    def _make_index(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The unchanged rows' match keys' hashes (32 bits), sorted, and each one's row."""
        parts: list[np.ndarray[Any, Any]] = []
        rows: list[np.ndarray[Any, Any]] = []
        for i in range(0, len(self.pos), SNAPSHOT_FLUSH_ROWS):
            at = self.pos[i : i + SNAPSHOT_FLUSH_ROWS]
            got = self.snapshot.take(at, ["match_by", "match_value"])
            keys = pc.binary_join_element_wise(
                got.column("match_by"), got.column("match_value"), ":"
            )
            listed = keys.to_pylist()
            has = np.fromiter((k is not None for k in listed), bool, len(listed))
            parts.append(
                np.fromiter(
                    (hash(k) & _MASK for k in listed if k is not None), np.uint32, int(has.sum())
                )
            )
            rows.append(np.asarray(at[has], dtype=np.int64))
        hashes = np.concatenate([np.zeros(0, np.uint32), *parts])
        where = np.concatenate([np.zeros(0, np.int64), *rows])
        order = np.argsort(hashes, kind="stable")
        return hashes[order], where[order]

    def owner(self, match_key: str) -> str | None:
        """The ledger key of the unchanged row whose match key is ``match_key``, or None.
        The index is made at the first row asked for (an unchanged run asks for none)."""
        if self._index is None:
            self._index = self._make_index()
        hashes, rows = self._index
        h = np.uint32(hash(match_key) & _MASK)  # of the array's type: no copy of it to compare
        i = int(np.searchsorted(hashes, h))
        while i < len(hashes) and hashes[i] == h:
            row = int(rows[i])
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

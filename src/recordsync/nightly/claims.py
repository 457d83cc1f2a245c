"""The match keys of the rows a step with change detection in the database did not read
(:mod:`.pushdown`): a row read from the diff whose match key (``email:ann@x.io``,
``name:Acme``) is an unchanged row's would be written onto that row's record, so it is held
``merged`` instead of sent (a type the service deduplicates, ``merges: hold``). Looked up by
the hashes the snapshot keeps of its match keys, each hit confirmed on the key's text."""

from __future__ import annotations

from typing import Any

import numpy as np

from recordsync.core.model import PreparedRow, RowStatus
from recordsync.state.snapshots import Snapshot


class Claims:
    """The unchanged rows' match keys (snapshot rows ``pos``)."""

    def __init__(self, snapshot: Snapshot, pos: np.ndarray[Any, Any]) -> None:
        self.snapshot = snapshot
        self.pos = pos
        self._index: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None
        self.unchanged = np.zeros(0, dtype=bool)

    def owner(self, match_key: str) -> str | None:
        """The ledger key of the unchanged row whose match key is ``match_key``, or None.
        The index is made at the first row asked for (an unchanged run asks for none)."""
        if self._index is None:
            self._index = self.snapshot.match_key_hashes()
            self.unchanged = np.zeros(len(self.snapshot), dtype=bool)
            self.unchanged[self.pos] = True
        hashes, rows = self._index
        h = hash(match_key)
        i = int(np.searchsorted(hashes, h))
        while i < len(hashes) and hashes[i] == h:
            row = int(rows[i])
            i += 1
            if not self.unchanged[row]:
                continue
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

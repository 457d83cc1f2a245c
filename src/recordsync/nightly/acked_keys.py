"""The snapshot writer of a step whose change detection runs in the database
(:mod:`recordsync.nightly.pushdown`): it also keeps the keys of the rows it adds (rows read
from the database's diff that ended created, updated or unchanged), a list of Arrow arrays,
for the update of the database's table of synced rows at the step's end."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from recordsync.state.snapshots import SnapshotWriter

_FLUSH = 65_536


class AckedKeysWriter(SnapshotWriter):
    """A :class:`SnapshotWriter` that remembers the keys added one by one (never the ones
    carried from the last snapshot: those are synced already)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keys: list[str] = []
        self._arrays: list[pa.Array] = []

    def add(
        self,
        digest: tuple[int, int],
        key: str,
        match_by: str | None,
        match_value: Any,
        record_id: int,
    ) -> None:
        super().add(digest, key, match_by, match_value, record_id)
        self._keys.append(key)
        if len(self._keys) >= _FLUSH:
            self._arrays.append(pa.array(self._keys, pa.string()))
            self._keys = []

    def add_many(
        self,
        digests: Sequence[tuple[int, int]],
        keys: Sequence[str],
        match_bys: Sequence[str | None],
        match_values: Sequence[Any],
        record_ids: Sequence[int],
    ) -> None:
        for row in zip(digests, keys, match_bys, match_values, record_ids, strict=True):
            self.add(*row)

    def acked(self) -> Iterator[pa.Array]:
        """The keys added, in the order they came, an array at a time."""
        yield from self._arrays
        if self._keys:
            yield pa.array(self._keys, pa.string())

    @property
    def acked_count(self) -> int:
        return sum(len(a) for a in self._arrays) + len(self._keys)

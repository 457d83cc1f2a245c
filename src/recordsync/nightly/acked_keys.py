"""The snapshot writer of a step whose change detection runs in the database
(:mod:`recordsync.nightly.pushdown`): it also keeps the keys of the rows it adds (rows read
from the database's diff that ended created, updated or unchanged), for the update of the
database's table of synced rows at the step's end. A first run in the database's mode adds
every row of the query: the keys are written to a temporary Arrow stream an array of
:data:`_FLUSH` at a time (10M keys of seven characters are about 110 MB as Arrow strings), and
read back from it an array at a time."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

import pyarrow as pa

from recordsync.state.snapshots import SnapshotWriter

_FLUSH = 65_536
_SCHEMA = pa.schema([("key", pa.string())])


class AckedKeysWriter(SnapshotWriter):
    """A :class:`SnapshotWriter` that remembers the keys added one by one (never the ones
    carried from the last snapshot: those are synced already)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keys: list[str] = []
        self._file: IO[bytes] | None = None
        self._stream: pa.ipc.RecordBatchStreamWriter | None = None
        self._spilled = 0

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
            self._spill()

    def _spill(self) -> None:
        if self._stream is None:
            self._file = tempfile.TemporaryFile(prefix="recordsync-acked-")  # noqa: SIM115
            self._stream = pa.ipc.new_stream(self._file, _SCHEMA)
        self._stream.write_batch(pa.record_batch([pa.array(self._keys, pa.string())], _SCHEMA))
        self._spilled += len(self._keys)
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
        """The keys added, in the order they came, an array at a time (once: the keys are
        read from their temporary file, which is then closed)."""
        if self._stream is not None and self._file is not None:
            self._stream.close()
            self._file.seek(0)
            with pa.ipc.open_stream(self._file) as reader:
                for batch in reader:
                    yield batch.column(0)
            self._close_file()
        if self._keys:
            yield pa.array(self._keys, pa.string())

    @property
    def acked_count(self) -> int:
        return self._spilled + len(self._keys)

    def discard(self) -> None:
        self._close_file()
        super().discard()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._stream = None, None

"""Batch marks: recognise a whole read batch as the snapshot's rows without digesting its rows.

An unchanged nightly export is read in the same batches as the night before. Digesting each
of its rows (:func:`recordsync.state.digests.row_digests`: a join of its cells and one XXH3
call a row, from Python) was most of the time an unchanged re-run took to decide. A *mark*
names a whole batch instead, in one pass over its columns' buffers:

- the **batch digest**: XXH3-128 over the salt of :func:`recordsync.state.digests.row_digests`
  (the fingerprint, the batch's column names and types), the row count, and per column the
  mapping reads (its name, each cell's length in its text form, -1 for a null, and the
  cells' bytes one after another). Equal batch digests: the same cells, so the same row
  digests;
- the **run digest**: XXH3-128 over the batch's row digests, the first halves then the
  second (:func:`run_digest`).

A run records a mark for each batch whose rows all have a digest, and the snapshot it writes
keeps them (:class:`BatchMarks`, in the custom metadata of an empty last record batch of the
file). The next run, reading a batch whose batch digest is a mark, takes the snapshot rows
where its next row is expected (the rows after the last one matched, as
:meth:`recordsync.state.snapshot_match.DigestIndex.match` guesses) and checks that their
digests give the mark's run digest. If they do, those rows are the batch's, with those very
digests: the batch's match is what digesting each row would have found, made from the
snapshot's digests. If not (rows that failed last time and are not in the snapshot, rows
in another order, a batch cut elsewhere), the batch's rows are digested one by one, as
without marks. A mark is never trusted on its own: only with the snapshot rows it names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import xxhash

from recordsync.state.digests import Digests, as_text, salt

METADATA_KEY = b"recordsync.batch_marks.v1"
"""The custom-metadata key of the snapshot file's last, empty record batch."""
_WIDTH = 16  # bytes of a batch digest, and of a run digest


def batch_digest(batch: pa.RecordBatch, columns: Sequence[str], fp: bytes) -> bytes | None:
    """16 bytes naming the cells of ``batch`` in ``columns`` (their text, as
    :func:`recordsync.state.digests.row_digests` digests them) under fingerprint ``fp``; None
    when a column has no text form (the batch takes the full path anyway)."""
    h = xxhash.xxh3_128(salt(fp, batch.schema).tobytes())
    h.update(int(batch.num_rows).to_bytes(8, "little"))
    for name in columns:
        text = as_text(batch.column(name))
        if text is None:
            return None
        h.update(name.encode("utf-8", "surrogatepass") + b"\x00")
        lengths, data = _cells(text)
        h.update(lengths)
        h.update(data)
    return h.digest()


def _cells(text: pa.Array) -> tuple[bytes, memoryview | bytes]:
    """The lengths of a string array's values (little-endian int64, -1 for a null) and the
    bytes of its values one after another (a view of its data buffer)."""
    n = len(text)
    offsets, data = text.buffers()[1], text.buffers()[2]
    if not n or offsets is None:
        return np.full(n, -1, dtype="<i8").tobytes(), b""
    width = np.int64 if pa.types.is_large_string(text.type) else np.int32
    off = np.frombuffer(offsets, width, count=n + 1, offset=text.offset * width(0).itemsize)
    lengths = np.diff(off).astype("<i8")
    if text.null_count:
        valid = text.is_valid().to_numpy(zero_copy_only=False)
        lengths[~valid] = -1
    first, last = int(off[0]), int(off[-1])
    values = memoryview(data)[first:last] if data is not None and last > first else b""
    return lengths.tobytes(), values


def run_digest(d0: npt.NDArray[np.uint64], d1: npt.NDArray[np.uint64]) -> bytes:
    """16 bytes naming a run of row digests (first halves ``d0``, second halves ``d1``)."""
    h = xxhash.xxh3_128(np.ascontiguousarray(d0, dtype="<u8").tobytes())
    h.update(np.ascontiguousarray(d1, dtype="<u8").tobytes())
    return h.digest()


class BatchMarks(Mapping[bytes, bytes]):
    """Marks by batch digest: the run digest of the batch's rows."""

    def __init__(self, marks: dict[bytes, bytes] | None = None) -> None:
        self._marks: dict[bytes, bytes] = dict(marks or {})

    def add(self, batch: bytes | None, digests: Digests, ok: npt.NDArray[np.bool_]) -> None:
        """Mark a batch (its batch digest, None: not markable) whose rows have ``digests``, if
        each has one (``ok``)."""
        if batch is not None and len(digests) and bool(ok.all()):
            self._marks[batch] = run_digest(digests[:, 0], digests[:, 1])

    def __getitem__(self, batch: bytes) -> bytes:
        return self._marks[batch]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._marks)

    def __len__(self) -> int:
        return len(self._marks)

    def encode(self) -> bytes:
        """The marks as the snapshot file keeps them: 32 bytes each."""
        return b"".join(k + v for k, v in self._marks.items())

    @classmethod
    def decode(cls, raw: bytes | None) -> BatchMarks:
        """Marks read back; none from a value of the wrong size (a damaged file: every batch
        is digested row by row, nothing is trusted)."""
        if not raw or len(raw) % (2 * _WIDTH):
            return cls()
        step = 2 * _WIDTH
        return cls(
            {raw[i : i + _WIDTH]: raw[i + _WIDTH : i + step] for i in range(0, len(raw), step)}
        )

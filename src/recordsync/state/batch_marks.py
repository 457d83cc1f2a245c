"""Batch marks: recognise the rows of a read batch as the snapshot's without digesting each.

An unchanged nightly export is read in the same batches as the night before. Digesting each
of its rows (:func:`recordsync.state.digests.row_digests`: a join of its cells and one XXH3
call a row, from Python) was most of the time an unchanged re-run took to decide. A *mark*
names a span of rows of a read batch instead (``sizes.MARK_ROWS`` rows from the batch's
start, the last span shorter), in one pass over its columns' buffers:

- the **span digest**: XXH3-128 over the salt of :func:`recordsync.state.digests.row_digests`
  (the fingerprint, the batch's column names and types), the span's row count, and per
  column the mapping reads (its name, each cell's length in its text form, -1 for a null
  less the bytes its slot spans, if any, and the cells' bytes one after another). Equal
  span digests: the same cells, so the same row digests;
- the **run digest**: XXH3-128 over the span's row digests, the first halves then the
  second (:func:`run_digest`).

A run records a mark for each span whose rows all have a digest, and the snapshot it writes
keeps them (:class:`BatchMarks`, in the custom metadata of an empty last record batch of the
file). The next run, reading a span whose digest is a mark, takes the snapshot rows where
its next row is expected (the rows after the last one matched, as
:meth:`recordsync.state.snapshot_match.DigestIndex.match` guesses) and checks that their
digests give the mark's run digest. If they do, those rows are the span's, with those very
digests: the span's match is what digesting each row would have found, made from the
snapshot's digests. If not (a row that failed last time and is not in the snapshot, rows
in another order, a batch cut elsewhere), the span's rows are digested one by one, as
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
_WIDTH = 16  # bytes of a span digest, and of a run digest


def span_digests(
    batch: pa.RecordBatch, columns: Sequence[str], fp: bytes, span: int
) -> list[bytes] | None:
    """16 bytes naming the cells in ``columns`` (their text, as
    :func:`recordsync.state.digests.row_digests` digests them) of each span of ``span`` rows
    of ``batch`` from its start, under fingerprint ``fp``: the same as the digest of that span
    read as a batch of its own. None when a column has no text form (the batch takes the full
    path anyway)."""
    n, span = batch.num_rows, max(span, 1)
    starts = list(range(0, n, span))
    parts: list[tuple[bytes, memoryview, list[int], memoryview]] = []
    for name in columns:
        text = as_text(batch.column(name))
        if text is None:
            return None
        parts.append((name.encode("utf-8", "surrogatepass") + b"\x00", *_cells(text, span)))
    seed = salt(fp, batch.schema).tobytes()
    out: list[bytes] = []
    for j, a in enumerate(starts):
        b = min(a + span, n)
        h = xxhash.xxh3_128(seed)
        h.update((b - a).to_bytes(8, "little"))
        for label, lengths, bounds, data in parts:
            h.update(label)
            h.update(lengths[a:b])
            h.update(data[bounds[j] : bounds[j + 1]])
        out.append(h.digest())
    return out


def _cells(text: pa.Array, span: int) -> tuple[memoryview, list[int], memoryview]:
    """A string array's value lengths (a view of little-endian int64s, -1 for a null), where
    in its data each span of ``span`` values starts (and where the last ends), and a view of
    its data buffer.

    Arrow lets a null slot span bytes of the data buffer (readers and kernels usually leave
    it empty, but nothing promises it). Those bytes are hashed with the rest, so a null's
    length says how many: ``-1 - bytes`` (-1 for an empty slot). Lengths and data then name
    the cells one way only. With -1 for every null, bytes moved between null slots and the
    cells beside them would hash alike: ``[null over "x", "ab", null]`` and ``[null, "xa",
    null over "b"]`` are both lengths ``-1, 2, -1`` over ``"xab"``, and a changed span could
    pass for a mark."""
    n = len(text)
    offsets, data = text.buffers()[1], text.buffers()[2]
    empty = memoryview(b"")
    if not n or offsets is None:
        return np.full(n, -1, dtype="<i8").data, [0] * (len(range(0, n, span)) + 1), empty
    width = np.int64 if pa.types.is_large_string(text.type) else np.int32
    off = np.frombuffer(offsets, width, count=n + 1, offset=text.offset * width(0).itemsize)
    lengths = np.diff(off).astype("<i8")
    if text.null_count:
        valid = text.is_valid().to_numpy(zero_copy_only=False)
        lengths[~valid] = -1 - lengths[~valid]
    bounds = off[[*range(0, n, span), n]].tolist()
    return lengths.data, bounds, memoryview(data) if data is not None else empty


def run_digest(d0: npt.NDArray[np.uint64], d1: npt.NDArray[np.uint64]) -> bytes:
    """16 bytes naming a run of row digests (first halves ``d0``, second halves ``d1``)."""
    h = xxhash.xxh3_128(np.ascontiguousarray(d0, dtype="<u8").tobytes())
    h.update(np.ascontiguousarray(d1, dtype="<u8").tobytes())
    return h.digest()


class BatchMarks(Mapping[bytes, bytes]):
    """Marks by span digest: the run digest of the span's rows."""

    def __init__(self, marks: dict[bytes, bytes] | None = None) -> None:
        self._marks: dict[bytes, bytes] = dict(marks or {})

    def add(self, span: bytes | None, digests: Digests, ok: npt.NDArray[np.bool_]) -> None:
        """Mark a span (its span digest, None: not markable) whose rows have ``digests``, if
        each has one (``ok``)."""
        if span is not None and len(digests) and bool(ok.all()):
            self._marks[span] = run_digest(digests[:, 0], digests[:, 1])

    def add_spans(
        self, spans: Sequence[bytes] | None, size: int, digests: Digests, ok: npt.NDArray[np.bool_]
    ) -> None:
        """Mark each span of ``size`` rows of a batch (``spans``: their digests,
        :func:`span_digests`) whose rows have ``digests`` (``ok``: each has one)."""
        for j, span in enumerate(spans or ()):
            a = j * size
            self.add(span, digests[a : a + size], ok[a : a + size])

    def __getitem__(self, span: bytes) -> bytes:
        return self._marks[span]

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

"""What the first pass of :func:`recordsync.prepare.digests.prepare_digested` learnt about
each batch (:class:`Seen`: its rows, digests and snapshot matches, about 33 bytes a row),
kept for the second pass in a :class:`SeenLog`: in memory up to ``sizes.SEEN_SPILL_ROWS`` rows,
then appended to a temporary file and read back one batch at a time, so that a source of
any size costs the same memory. The rows of a query that the first pass keeps past
``sizes.UNMATCHED_KEEP_ROWS`` go to a temporary file of their own (:class:`KeptRows`), so that
the query is run once.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from recordsync.read import BadLine, SourceBatch
from recordsync.tuning import sizes

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Seen:
    """What the first pass learnt about one batch."""

    file: str
    rows: npt.NDArray[np.int64]
    digests: npt.NDArray[np.uint64] | None
    ok: npt.NDArray[np.bool_] | None
    found: npt.NDArray[np.int64]
    """Snapshot row per batch row, -1 where none."""
    bad: list[BadLine] = field(default_factory=list)
    """The batch's malformed lines."""
    kept: SourceBatch | None = None
    """The batch's rows not found in the snapshot, if kept (all of them: with ``bad``)."""
    at: int = -1
    """Where the arrays are in the log's file (-1: in memory)."""
    stored: tuple[int, bool, bool] = (0, False, False)
    """In the file: the number of rows, whether digests and ``ok`` are there."""
    part: bool = False
    """What was learnt about a part of a read batch (:meth:`split`), not all of it."""
    cells: list[bytes] | None = None
    """The batch's span digests as the first pass read it (:func:`.batch_marks.span_digests`
    of ``sizes.MARK_ROWS`` rows each; None: not digestible): the marks a first run leaves
    for the batch, and what a second pass that reads the source again checks it reads."""
    on_disk: bool = False
    """The batch's rows not found in the snapshot are in the :class:`KeptRows` file (``kept``
    is None until the second pass reads them back)."""

    def split(self, n: int) -> tuple[Seen, Seen]:
        """What was learnt about the batch's first ``n`` rows and about the others, as
        :meth:`SourceBatch.split` splits the batch: views of the arrays (read back, if they
        were in the log's file), nothing kept (the second pass's view of a batch)."""
        if self.kept is not None or self.on_disk:
            raise ValueError("a batch whose rows are kept is not split")
        if not 0 < n < len(self.rows):
            raise ValueError(f"cannot split a batch of {len(self.rows)} rows at {n}")
        limit = int(self.rows[n])
        d, ok = self.digests, self.ok
        return (
            Seen(
                self.file,
                self.rows[:n],
                None if d is None else d[:n],
                None if ok is None else ok[:n],
                self.found[:n],
                [b for b in self.bad if b.line < limit],
                part=True,
            ),
            Seen(
                self.file,
                self.rows[n:],
                None if d is None else d[n:],
                None if ok is None else ok[n:],
                self.found[n:],
                [b for b in self.bad if b.line >= limit],
                part=True,
            ),
        )


_EMPTY_I = np.zeros(0, dtype=np.int64)
_DTYPES = (np.int64, np.int64, np.uint64, np.bool_)  # rows, found, digests, ok


class SeenLog:
    """The first pass's :class:`Seen` s, in source order. Past ``limit`` rows held, the
    arrays of the batches held are appended to a temporary file (their bytes, one write a
    batch) and read back by :meth:`__iter__`, one batch at a time (the batch's other fields
    stay in memory)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or sizes.SEEN_SPILL_ROWS
        self.items: list[Seen] = []
        self._held: list[Seen] = []
        self._held_rows = 0
        self._file: IO[bytes] | None = None

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, seen: Seen) -> None:
        self.items.append(seen)
        self._held.append(seen)
        self._held_rows += len(seen.rows)
        if self._held_rows > self.limit:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="recordsync-seen-")  # noqa: SIM115
            self._file.seek(0, 2)
            for s in self._held:
                s.at = self._file.tell()
                s.stored = (len(s.rows), s.digests is not None, s.ok is not None)
                parts = zip((s.rows, s.found, s.digests, s.ok), _DTYPES, strict=True)
                data = [np.ascontiguousarray(a, t).data for a, t in parts if a is not None]
                self._file.write(b"".join(data))
                _unload(s)
            self._held, self._held_rows = [], 0

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Seen]:
        """Every batch's Seen with its arrays; those read from the file are dropped again
        once the next one is asked for (changes to them are not kept)."""
        for s in self.items:
            if s.at < 0:
                yield s
                continue
            assert self._file is not None
            n, digests, ok = s.stored
            self._file.seek(s.at)
            buf = bytearray(n * (16 + 16 * digests + ok))
            self._file.readinto(buf)  # type: ignore[attr-defined]
            s.rows = np.frombuffer(buf, np.int64, n)
            s.found = np.frombuffer(buf, np.int64, n, 8 * n)
            d = np.frombuffer(buf, np.uint64, 2 * n, 16 * n) if digests else None
            s.digests = d.reshape(n, 2) if d is not None else None
            s.ok = np.frombuffer(buf, np.bool_, n, (16 + 16 * digests) * n) if ok else None
            try:
                yield s
            finally:
                _unload(s)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        self.close()


class KeptRows:
    """The rows a query's first pass keeps for its second past ``sizes.UNMATCHED_KEEP_ROWS``:
    the batches appended, in source order, to one Arrow IPC stream in a temporary file
    (LZ4-compressed), and read back in that order, one batch at a time. A query's second
    pass then prepares the rows the first pass read, whatever the database holds by then
    (rows written, updated or deleted meanwhile; rows sharing a key in another order), and
    the query runs once. A file source is read again instead (a file does not change under
    a run, and it is checked to be the same: :mod:`recordsync.prepare.digests`)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = tempfile.TemporaryFile(prefix="recordsync-kept-")  # noqa: SIM115
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._reader: pa.ipc.RecordBatchStreamReader | None = None
        self._schema: pa.Schema | None = None
        self.rows = 0
        """Rows written."""

    @property
    def schema(self) -> pa.Schema | None:
        """The batches' schema (None: none written)."""
        return self._schema

    def add(self, batch: pa.RecordBatch) -> bool:
        """Append ``batch``; False (nothing written) when it cannot be: a schema other than
        the first batch's, or the file cannot be written (a full disk: logged). The caller
        then reads the source again instead, and :meth:`close` s this."""
        assert self._file is not None and self._reader is None
        try:
            if self._writer is None:
                options = pa.ipc.IpcWriteOptions(compression="lz4")
                self._writer = pa.ipc.new_stream(self._file, batch.schema, options=options)
                self._schema = batch.schema
            elif self._schema is None or not batch.schema.equals(self._schema):
                return False
            self._writer.write_batch(batch)
        except OSError as exc:
            log.warning("the query's rows could not be kept on disk (%s): it runs again", exc)
            return False
        self.rows += batch.num_rows
        return True

    def finish(self) -> None:
        """The last batch is written: what follows reads."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.flush()
            log.debug("%d rows of the query kept on disk: %d bytes", self.rows, self._file.tell())

    def next(self, seen: Seen) -> SourceBatch:
        """The rows kept of the batch ``seen`` (the next batch written): its rows not found in
        the snapshot, as the first pass took them (:func:`.digest_scan.take`)."""
        if self._reader is None:
            assert self._file is not None and self._writer is None
            self._file.seek(0)
            self._reader = pa.ipc.open_stream(self._file)
        batch = self._reader.read_next_batch()
        rows = seen.rows[seen.found < 0]
        if len(rows) != batch.num_rows:  # written by this run, read in its order
            raise RuntimeError(f"kept rows of {seen.file}: {batch.num_rows} read, {len(rows)} kept")
        return SourceBatch(seen.file, batch, rows, [])

    def close(self) -> None:
        self._reader = None
        if self._writer is not None:
            with contextlib.suppress(OSError):  # closing after a failed write
                self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        if hasattr(self, "_file"):  # not when the file could not be made
            self.close()


def _unload(s: Seen) -> None:
    s.rows, s.found, s.digests, s.ok = _EMPTY_I, _EMPTY_I, None, None

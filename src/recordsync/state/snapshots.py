"""Snapshots of source-row digests (:mod:`recordsync.state.digests`), per pipeline and mapping.

Life cycle, which keeps a snapshot from ever vouching for a ledger it did not see:

- a step that starts *takes* its scope's snapshot: the registration is deleted (committed)
  before anything is sent, whatever happens next; the file is read (memory-mapped) and
  removed;
- a step that completes (every row reported and acknowledged, no stop) of a full run
  registers a new snapshot written while it ran: the rows that ended ``created``,
  ``updated`` (with a record id) or ``unchanged``;
- a run that dies or is stopped, a retry (a partial source), ``--full-refresh`` and
  ``recordsync state reset`` leave no snapshot: the next run takes the full path once.

Form: an Arrow IPC file, a row's match rule and value left out where its key says them
(:mod:`.snapshot_codec`), compressed as a whole with zstd as it is written (a third of its
size with e-mail keys: the digests do not compress, the keys, record ids and offsets do).
The run that takes it decompresses it into a file beside it, which it memory-maps and removes
at once (:func:`opened`); a file written uncompressed by an earlier recordsync is mapped as it
is. Where: in ``snapshots/`` beside an SQLite state file; in a PostgreSQL state database, the
same file's bytes in ``snapshot_blocks`` (:mod:`.pg_snapshots`), so the next run needs no
local disk of this one (it writes and reads a temporary file).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.core.model import UnchangedBlock
from recordsync.state.batch_marks import METADATA_KEY, BatchMarks
from recordsync.state.digests import Digests
from recordsync.state.pg_snapshots import load_snapshot_blocks, store_snapshot_blocks
from recordsync.state.snapshot_codec import SNAPSHOT_FILE_SCHEMA, decode, encode, stored_names
from recordsync.state.snapshot_match import DigestIndex, key_hashes, take_rows
from recordsync.state.snapshot_rows import Pending
from recordsync.state.store import StateStore, drop_snapshots, utc_now
from recordsync.tuning import sizes

COMPRESSION = "zstd"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_COPY = 1 << 22  # bytes decompressed at a time


def opened(path: Path) -> Path:
    """The file to map for the snapshot file ``path``: ``path`` itself when it is not
    compressed (an earlier recordsync's), else its contents decompressed into a file beside it
    (``<name>.open.tmp``: the caller removes it; a writer of the scope removes one left by a
    process that died)."""
    with open(path, "rb") as f:
        if f.read(len(_ZSTD_MAGIC)) != _ZSTD_MAGIC:
            return path
    out = path.with_name(f"{path.stem}.open.tmp")
    try:
        with (
            pa.CompressedInputStream(pa.OSFile(str(path)), COMPRESSION) as src,
            open(out, "wb") as dst,
        ):
            while chunk := src.read(_COPY):
                dst.write(chunk)
    except BaseException:
        with contextlib.suppress(OSError):
            out.unlink()
        raise
    return out


def file_reader(path: Path) -> pa.RecordBatchFileReader:
    """A snapshot file's batches, for a look at it (tests, benchmarks): decompressed in
    memory. A run maps the file instead (:func:`take`)."""
    with open(path, "rb") as f:
        compressed = f.read(len(_ZSTD_MAGIC)) == _ZSTD_MAGIC
    if not compressed:
        return pa.ipc.open_file(pa.memory_map(str(path)))
    with pa.CompressedInputStream(pa.OSFile(str(path)), COMPRESSION) as src:
        return pa.ipc.open_file(pa.py_buffer(src.read()))


def read_file(path: Path) -> Snapshot:
    """A snapshot file (uncompressed), memory-mapped and read as a run reads the one it takes
    (:func:`take`), for a look at it (tests, benchmarks); the file is left where it is."""
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    table, marks = _read_mapped(mapped)
    return Snapshot(table, mapped, None, marks)


def snapshot_path(store: StateStore, scope: int, run_id: str) -> Path:
    tag = blake2b(run_id.encode("utf-8"), digest_size=6).hexdigest()
    directory = store.snapshot_dir
    if directory is None:  # written to a temporary file of this process, then stored
        directory = Path(tempfile.gettempdir())  # in the database
        return directory / f"recordsync-{os.getpid()}-scope{scope}-{tag}.arrow"
    return directory / f"scope{scope}-{tag}.arrow"


class Snapshot:
    """A loaded snapshot: digests sorted for matching, the rest read on demand."""

    def __init__(
        self,
        table: pa.Table,
        mapped: mmap.mmap | None = None,
        packed: int | None = None,
        marks: BatchMarks | None = None,
    ) -> None:
        self.table = table  # memory-mapped batches, as written: never copied whole
        self.marks = marks if marks is not None else BatchMarks()
        """The spans of the batches the run that wrote it read (:mod:`.batch_marks`)."""
        self.packed = packed
        """A descriptor of the compressed file it was read from (removed from its directory;
        closed with this object): a step that carries every row of it in its order registers
        a copy of it as its own."""
        if packed is not None:
            weakref.finalize(self, os.close, packed)
        self._compact = "in_key" in table.column_names  # the file's form (.snapshot_codec)
        self._mapped = mapped  # dropped from memory after each read: :meth:`release`
        self._batches = self.table.to_batches()  # zero-copy: the file's record batches
        self._digests: DigestIndex | None = None  # made when first matched (:meth:`match`)
        self._match_h: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
        self._key_h: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
        self._starts = np.cumsum([0, *(b.num_rows for b in self._batches)], dtype=np.int64)
        self.release()

    def release(self) -> None:
        """Drop the mapped file's pages from memory (read again from the file when used)."""
        if self._mapped is not None:
            self._mapped.madvise(mmap.MADV_DONTNEED)

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def match(self, digests: Digests, ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """Per row: the snapshot row with the same digest, or -1 (:mod:`.snapshot_match`)."""
        if self._digests is None:  # a step whose change detection runs in the database never
            self._digests = DigestIndex(self._batches, release=self.release)  # matches
        found = self._digests.match(digests, ok)
        if self._digests.on_disk:
            self.release()  # the file's digests read where the rows were expected
        return found

    def match_span(
        self, span: bytes | None, n: int, skip: int = 0
    ) -> tuple[npt.NDArray[np.int64], Digests] | None:
        """For a span of ``n`` rows of a read batch whose span digest ``span`` is one of
        :attr:`marks`: per row, the snapshot row that :meth:`match` would find, and the rows'
        digests, taken from the snapshot where its rows come next (:mod:`.batch_marks`;
        ``skip``: as :meth:`.snapshot_match.DigestIndex.match_run` has it); None when the
        span is not marked or those rows are not its (digest its rows)."""
        run = self.marks.get(span) if span is not None else None
        if run is None:
            return None
        if self._digests is None:
            self._digests = DigestIndex(self._batches, release=self.release)
        got = self._digests.match_run(n, run, skip)
        if self._digests.on_disk:
            self.release()
        if got is None:
            return None
        start, digests = got
        return np.arange(start, start + n, dtype=np.int64), digests

    def match_key_hashes(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Python hashes of the rows' match keys (``by:value``, as the mapping stage makes
        them), sorted, and the snapshot row of each (16 bytes a snapshot row: a caller that
        can stream reads :meth:`hash_batches` instead)."""
        if self._match_h is None:
            self._match_h = _sorted_hashes(self.hash_batches("match"))
        return self._match_h

    def key_hashes(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The same for the ledger keys."""
        if self._key_h is None:
            self._key_h = _sorted_hashes(self.hash_batches("key"))
        return self._key_h

    def hash_batches(
        self, which: str, among: list[str] | None = None
    ) -> Iterator[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.bool_]]]:
        """Per record batch of the file, in file order: its first snapshot row, the Python
        hashes of the ``which`` keys that are there (``"match"``: ``by:value``; ``"key"``:
        the ledger key) and which rows have one; with ``among``, only of the keys that are
        among those (the others are left out as if absent: a C++ set look-up a row, not a
        Python string and hash). One batch's key strings at a time, the mapped pages dropped
        after each."""
        wanted = None if among is None else pa.array(among, pa.string())
        for start, batch in zip(self._starts.tolist(), self._batches, strict=False):
            keys = batch.column("key") if which == "key" else self._match_keys(batch)
            if wanted is None:
                h, has = key_hashes(keys.to_pylist())
            else:
                inside = pc.is_in(keys, value_set=wanted.cast(keys.type))
                at = np.flatnonzero(pc.fill_null(inside, False).to_numpy(zero_copy_only=False))
                h, some = key_hashes(keys.take(pa.array(at, pa.int64())).to_pylist())
                has = np.zeros(len(keys), dtype=np.bool_)
                has[at[some]] = True
            del keys
            self.release()
            yield start, h, has

    def match_key_batches(self) -> Iterator[tuple[int, pa.Array, pa.Array]]:
        """Per record batch of the file, in file order: its first snapshot row, the rows'
        match keys (``by:value``, as the mapping stage makes them; null: none) and ledger
        keys, as Arrow arrays (nothing made into Python objects); the mapped pages dropped
        after each."""
        try:
            for start, batch in zip(self._starts.tolist(), self._batches, strict=False):
                yield start, self._match_keys(batch), batch.column("key")
                self.release()
        finally:
            self.release()

    def _match_keys(self, batch: pa.RecordBatch) -> pa.Array:
        keys = pc.binary_join_element_wise(
            batch.column("match_by"), batch.column("match_value"), ":"
        )
        if self._compact:  # a row whose rule and value are its key's: the key itself
            keys = pc.if_else(batch.column("in_key"), batch.column("key"), keys)
        return keys

    def column(self, name: str, idx: npt.NDArray[np.int64]) -> list[Any]:
        """Values of one column at snapshot rows ``idx``."""
        return list(self.take(idx, [name]).column(0).to_pylist())

    def take(self, idx: npt.NDArray[np.int64], names: list[str] | None = None) -> pa.Table:
        """Rows ``idx`` (in that order) of the columns ``names`` (None: all), batch by batch
        (:func:`.snapshot_match.take_rows`), as :data:`SNAPSHOT_SCHEMA` has them."""
        if self._compact:
            stored = take_rows(self.table, self._batches, self._starts, idx, stored_names(names))
            out = decode(stored, names)
        else:  # rows made in memory (tests, benchmarks): as they are
            out = take_rows(self.table, self._batches, self._starts, idx, names)
        self.release()  # the rows taken are copies
        return out

    def slice_stored(self, start: int, count: int) -> Iterator[pa.RecordBatch]:
        """Rows ``start`` to ``start + count`` as the snapshot file keeps them, a record batch
        (a slice of the file's, nothing copied) at a time; pages dropped after each."""
        try:
            for batch in self.table.slice(start, count).to_batches():
                yield batch if self._compact else encode(batch)
                self.release()
        finally:
            self.release()

    def take_stored(self, idx: npt.NDArray[np.int64]) -> pa.Table:
        """Rows ``idx`` as the snapshot file keeps them (:data:`SNAPSHOT_FILE_SCHEMA`)."""
        out = take_rows(self.table, self._batches, self._starts, idx)
        self.release()
        if self._compact:
            return out
        return pa.Table.from_batches(
            [encode(b) for b in out.to_batches()], schema=SNAPSHOT_FILE_SCHEMA
        )


def _sorted_hashes(
    parts: Iterator[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.bool_]]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The hashes of :meth:`Snapshot.hash_batches`, sorted, and the snapshot row of each."""
    hs: list[npt.NDArray[np.int64]] = [np.zeros(0, dtype=np.int64)]
    rows: list[npt.NDArray[np.int64]] = [np.zeros(0, dtype=np.int64)]
    for start, h, has in parts:
        hs.append(h)
        rows.append(np.flatnonzero(has).astype(np.int64) + start)
    h_all = np.concatenate(hs)
    del hs
    order = np.argsort(h_all, kind="stable")
    return h_all[order], np.concatenate(rows)[order]


def kept_fingerprint(store: StateStore, pipeline: str, mapping: str) -> bytes | None:
    """The fingerprint of the scope's snapshot, or None when it keeps none."""
    scope = store.scope_id(pipeline, mapping, create=False)
    if scope is None:
        return None
    row = store.connection.execute(
        "SELECT fingerprint FROM snapshots WHERE scope_id = ?", (scope,)
    ).fetchone()
    return bytes(row[0]) if row is not None and row[0] is not None else None


def take(store: StateStore, pipeline: str, mapping: str, fp: bytes | None) -> Snapshot | None:
    """Unregister the scope's snapshot (committed now) and return it if its fingerprint is
    ``fp`` (None: just drop it). Its file is removed once loaded."""
    scope = store.scope_id(pipeline, mapping)
    assert scope is not None
    directory = store.snapshot_dir
    with store.transaction() as conn:
        row = conn.execute(
            "SELECT fingerprint, file FROM snapshots WHERE scope_id = ?", (scope,)
        ).fetchone()
        if row is None:
            return None
        if directory is None:
            blocks = int(str(row[1]).removeprefix("blocks:") or 0)
            load = fp is not None and bytes(row[0]) == fp
            path = load_snapshot_blocks(conn, scope, blocks) if load else None
            conn.execute("DELETE FROM snapshot_blocks WHERE scope_id = ?", (scope,))
        else:
            path = directory / str(row[1])
        conn.execute("DELETE FROM snapshots WHERE scope_id = ?", (scope,))
    try:
        if path is None or fp is None or bytes(row[0]) != fp:
            return None
        try:
            plain = opened(path)
            try:
                with open(plain, "rb") as f:
                    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            finally:
                if plain != path:  # mapped: its pages stay readable until the map closes
                    with contextlib.suppress(OSError):
                        plain.unlink()
            table, marks = _read_mapped(mapped)
            # the compressed file, kept open once removed: the next snapshot if it is all
            # carried (:meth:`SnapshotWriter.commit`)
            packed = os.open(path, os.O_RDONLY) if plain != path else None
        except (OSError, ValueError, pa.ArrowException):
            return None  # gone, empty or damaged: the full path, and a new snapshot after it
        if table.schema != SNAPSHOT_FILE_SCHEMA:  # another recordsync's: the full path once
            if packed is not None:
                os.close(packed)
            return None
        return Snapshot(table, mapped, packed, marks)
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def _read_mapped(mapped: mmap.mmap) -> tuple[pa.Table, BatchMarks]:
    """The snapshot file's record batches, zero-copy over the map, a batch at a time with the
    pages each touched dropped after it: reading a batch touches about 2 MB of its 5 MB, and
    ``read_all`` held them all at once (a 10M-row snapshot: about 300 MB of the peak). And
    its batch marks: the custom metadata of an empty last batch (:meth:`SnapshotWriter.commit`;
    none in a file an earlier recordsync wrote)."""
    reader = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapped)))
    batches = []
    marks = BatchMarks()
    for i in range(reader.num_record_batches):
        batch, meta = reader.get_batch_with_custom_metadata(i)
        if batch.num_rows:
            batches.append(batch)
        elif meta is not None and METADATA_KEY in meta:
            marks = BatchMarks.decode(meta[METADATA_KEY])
        mapped.madvise(mmap.MADV_DONTNEED)
    return pa.Table.from_batches(batches, schema=reader.schema), marks


class SnapshotWriter:
    """Streams one step's snapshot to a temporary file; :meth:`commit` registers it."""

    def __init__(
        self,
        store: StateStore,
        pipeline: str,
        mapping: str,
        run_id: str,
        *,
        carry_in_bulk: bool = True,
    ) -> None:
        """``carry_in_bulk``: rows carried from :attr:`source` in its own order, from its first
        row on, are written as slices of it (or as its own file, when they are all of it)
        rather than taken row by row; the file holds the same rows in the same order either
        way (False: row by row, for the tests that compare the two)."""
        self.store, self.pipeline, self.mapping, self.run_id = store, pipeline, mapping, run_id
        scope = store.scope_id(pipeline, mapping)
        assert scope is not None
        self.scope = scope
        self.path = snapshot_path(store, scope, run_id)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        stale = [] if store.is_postgres else self.path.parent.glob(f"scope{scope}-*.tmp")
        for old in stale:  # left by a run that died
            with contextlib.suppress(OSError):
                old.unlink()
        self._tmp = self.path.with_suffix(".tmp")
        self._sink = pa.CompressedOutputStream(pa.OSFile(str(self._tmp), "wb"), COMPRESSION)
        self._writer = pa.ipc.new_file(self._sink, SNAPSHOT_FILE_SCHEMA)
        self._p = Pending()
        """Rows added and not written, as Python values: :data:`sizes.SNAPSHOT_PENDING_ROWS`
        at most."""
        self._ready: list[pa.RecordBatch] = []
        """Rows added and not written, as Arrow pieces of the next batch of the file."""
        self._ready_rows = 0
        self.rows = 0
        self.source: Snapshot | None = None
        """The snapshot this run read (the rows of UnchangedBlocks come from it)."""
        self._carried: list[npt.NDArray[np.int64]] = []
        self._carried_rows = 0
        self._bulk = carry_in_bulk
        self._ahead = carry_in_bulk
        """Every row so far is a row of :attr:`source`, from its first on, in its order, and
        nothing else was added: those rows (:attr:`_ahead_rows`) are not written yet (the
        source's own file is the new one if the step carries all of it)."""
        self._ahead_rows = 0
        self._ahead_written = 0
        """Of those, how many the row-by-row path would have written by now (its flushes)."""
        self.marks = BatchMarks()
        """The marks of the spans of the batches this run read (:mod:`.batch_marks`), kept in
        the file."""

    def add(
        self,
        digest: tuple[int, int],
        key: str,
        match_by: str | None,
        match_value: Any,
        record_id: int,
    ) -> None:
        if self._ahead:
            self._fall_behind()
        p = self._p
        p.d0.append(digest[0])
        p.d1.append(digest[1])
        p.key.append(key)
        p.match_by.append(match_by)
        p.match_value.append(None if match_value is None else str(match_value))
        p.record_id.append(record_id)
        if self._ready_rows + len(p.d0) >= sizes.SNAPSHOT_FLUSH_ROWS:
            self._flush()
        elif len(p.d0) >= sizes.SNAPSHOT_PENDING_ROWS:
            self._settle()

    def add_many(
        self,
        digests: Sequence[tuple[int, int]],
        keys: Sequence[str],
        match_bys: Sequence[str | None],
        match_values: Sequence[Any],
        record_ids: Sequence[int],
    ) -> None:
        """:meth:`add` of each row, given column-wise: the same rows in the same batches."""
        columns = (digests, keys, match_bys, match_values, record_ids)
        if self._ahead and len(digests):
            self._fall_behind()
        held = len(self._p.d0) + len(digests)
        if (
            self._ready_rows + held >= sizes.SNAPSHOT_FLUSH_ROWS
            or held >= sizes.SNAPSHOT_PENDING_ROWS
        ):  # a batch or a piece of one ends inside: row by row
            for row in zip(*columns, strict=True):
                self.add(*row)
        else:
            self._p.extend(*columns)

    def add_from_block(self, block: UnchangedBlock) -> None:
        """The rows of a block found unchanged: carried over from the last snapshot."""
        if self.source is None:
            raise ValueError("an UnchangedBlock without the snapshot it came from")
        rows = np.asarray(block.snapshot_rows, dtype=np.int64)
        if self._ahead:
            if _is_range(rows, self._ahead_rows):  # the source's next rows: nothing to write
                self._ahead_rows += len(rows)
                self._carried_rows += len(rows)  # as the row-by-row path counts them
                if self._carried_rows >= sizes.SNAPSHOT_FLUSH_ROWS:
                    self._ahead_written, self._carried_rows = self._ahead_rows, 0
                return
            self._fall_behind()
        self._carried.append(rows)
        self._carried_rows += len(rows)
        if self._carried_rows >= sizes.SNAPSHOT_FLUSH_ROWS:
            self._flush_carried()

    def _fall_behind(self) -> None:
        """The rows carried ahead, written where the row-by-row path has them: those it
        would have flushed by now written now, the others left to carry."""
        self._ahead = False
        self._write_range(0, self._ahead_written)
        if self._ahead_rows > self._ahead_written:
            self._carried = [np.arange(self._ahead_written, self._ahead_rows, dtype=np.int64)]
        self._carried_rows = self._ahead_rows - self._ahead_written

    def _flush_carried(self) -> None:
        if self._carried and self.source is not None:
            idx = np.concatenate(self._carried)
            if self._bulk and _is_range(idx, int(idx[0]) if len(idx) else 0):
                self._write_range(int(idx[0]) if len(idx) else 0, len(idx))
            else:
                for batch in self.source.take_stored(idx).to_batches():
                    self._writer.write_batch(batch)
                self.rows += len(idx)
        self._carried, self._carried_rows = [], 0

    def _write_range(self, start: int, count: int) -> None:
        """Rows ``start`` to ``start + count`` of :attr:`source`, in its order, as slices of
        its record batches (no row taken, nothing decoded)."""
        if count <= 0 or self.source is None:
            return
        for batch in self.source.slice_stored(start, count):
            self._writer.write_batch(batch)
        self.rows += count

    def _settle(self) -> None:
        """The rows held as Python values made an Arrow piece of the next batch: a third of
        their memory (a nightly run's changed rows come here; a batch of them as Python
        values held about 20 MB, growing with the source up to the batch's size)."""
        p = self._p
        if p.d0:
            self._ready.append(p.batch())
            self._ready_rows += len(p.d0)
            self._p = Pending()

    def _flush(self) -> None:
        self._settle()
        if not self._ready:
            return
        ready, self._ready, self._ready_rows = self._ready, [], 0
        if len(ready) > 1:  # the pieces as one batch of the file
            ready = pa.Table.from_batches(ready).combine_chunks().to_batches()
        for batch in ready:
            self._writer.write_batch(batch)
            self.rows += batch.num_rows

    def commit(self, fp: bytes) -> None:
        """Close the file and register it as the scope's snapshot."""
        source = self.source
        whole = self._ahead and source is not None and self._ahead_rows == len(source)
        if whole and source is not None and self.marks.keys() - source.marks.keys():
            whole = False  # spans the file does not mark yet: written anew, marked
        if whole and source is not None and source.packed is not None:
            # every row of the last snapshot carried, in its order, nothing else: the new
            # snapshot is that file, its bytes copied as they are
            self._writer.close()
            self._sink.close()
            _copy_file(source.packed, self._tmp)
            self.rows = len(source)
            self._ahead = False
        elif self._ahead:
            self._fall_behind()
        if not self._sink.closed:
            self._flush()
            self._flush_carried()
            if self.marks:
                self._writer.write_batch(  # no rows: a reader before marks reads none
                    pa.RecordBatch.from_pylist([], schema=SNAPSHOT_FILE_SCHEMA),
                    custom_metadata={METADATA_KEY: self.marks.encode()},
                )
            self._writer.close()
            self._sink.close()
        directory = self.store.snapshot_dir
        with self.store.transaction() as conn:
            drop_snapshots(conn, directory, [self.scope])
            if directory is None:  # the file's bytes into the database; no file is kept
                try:
                    file = f"blocks:{store_snapshot_blocks(conn, self.scope, self._tmp)}"
                finally:
                    self.discard()
            else:
                self._tmp.replace(self.path)
                file = self.path.name
            conn.execute(
                "INSERT INTO snapshots (scope_id, run_id, fingerprint, file, row_count,"
                " written_at) VALUES (?, ?, ?, ?, ?, ?)",
                (self.scope, self.run_id, fp, file, self.rows, utc_now()),
            )

    def discard(self) -> None:
        if not self._sink.closed:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._sink.close()
        with contextlib.suppress(OSError):
            self._tmp.unlink()


def _is_range(rows: npt.NDArray[np.int64], start: int) -> bool:
    """Whether ``rows`` are ``start, start + 1, ...`` (empty: yes)."""
    n = len(rows)
    return not n or (
        int(rows[0]) == start
        and int(rows[-1]) == start + n - 1
        and (n < 2 or bool((np.diff(rows) == 1).all()))
    )


def _copy_file(fd: int, dst: Path) -> None:
    """The whole of the open file ``fd`` into ``dst`` (replaced), in the kernel where it
    can (``os.copy_file_range``, else a read and a write)."""
    size = os.fstat(fd).st_size
    with open(dst, "wb") as out:
        done = 0
        try:
            while done < size:
                got = os.copy_file_range(fd, out.fileno(), size - done, done, done)
                if got <= 0:
                    break
                done += got
        except (AttributeError, OSError):
            pass
        out.seek(done)
        while done < size and (chunk := os.pread(fd, min(_COPY, size - done), done)):
            out.write(chunk)
            done += len(chunk)
        if done != size:
            raise OSError(f"{dst}: the snapshot copied short ({done} of {size} bytes)")

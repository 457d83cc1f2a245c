"""A snapshot's file on disk (recordsync.state.snapshots): compressed with zstd as it is
written, decompressed beside it when taken (nothing left behind), a file written uncompressed
by an earlier recordsync still taken, a damaged one refused (the full path runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from recordsync.state import StateStore
from recordsync.state.digests import fingerprint
from recordsync.state.snapshot_rows import Pending
from recordsync.state.snapshots import SnapshotWriter, take

FP = fingerprint("{}", None, None, None)
ROWS = 5000


def _write(store: StateStore, run_id: str) -> Path:
    w = SnapshotWriter(store, "p", "contacts", run_id)
    for i in range(ROWS):
        key = f"person.{i}@example.com"
        w.add((i * 7919 % 2**63, i), f"email:{key}", "email", key, 1000 + i)
    w.commit(FP)
    return w.path


def _keys(store: StateStore) -> list[str]:
    snap = take(store, "p", "contacts", FP)
    assert snap is not None
    return list(snap.column("key", np.arange(len(snap))))


def test_the_file_is_compressed_and_read_back_whole(tmp_path: Path) -> None:
    with StateStore(tmp_path / "state.db") as store:
        path = _write(store, "r1")
        stored = path.read_bytes()
        assert stored[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
        p = Pending()
        for i in range(ROWS):
            key = f"person.{i}@example.com"
            p.extend([(i * 7919 % 2**63, i)], [f"email:{key}"], ["email"], [key], [1000 + i])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, p.batch().schema) as writer:
            writer.write_batch(p.batch())
        assert 2 * len(stored) < sink.getvalue().size  # the same rows, uncompressed
        assert _keys(store) == [f"email:person.{i}@example.com" for i in range(ROWS)]
        assert list((tmp_path / "snapshots").iterdir()) == []  # taken: nothing left


def test_an_uncompressed_file_of_an_earlier_recordsync_is_taken(tmp_path: Path) -> None:
    with StateStore(tmp_path / "state.db") as store:
        path = _write(store, "r1")
        with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as src:
            plain = src.read()
        path.write_bytes(plain)  # as versions before the compression wrote it
        assert _keys(store)[:2] == ["email:person.0@example.com", "email:person.1@example.com"]
        assert list((tmp_path / "snapshots").iterdir()) == []


def test_a_damaged_file_is_refused_and_removed(tmp_path: Path) -> None:
    with StateStore(tmp_path / "state.db") as store:
        path = _write(store, "r1")
        stored = path.read_bytes()
        path.write_bytes(stored[: len(stored) // 2])  # cut short
        assert take(store, "p", "contacts", FP) is None
        assert list((tmp_path / "snapshots").iterdir()) == []
        _write(store, "r2")  # the next complete run writes a new one
        assert len(_keys(store)) == ROWS

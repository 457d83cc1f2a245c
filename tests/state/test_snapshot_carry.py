"""Rows carried from the last snapshot into the next (recordsync.state.snapshots.SnapshotWriter):
carried in the last snapshot's own order they are written as slices of it, or the new
snapshot is a copy of its file when every row of it is carried and nothing else is added;
either way the file holds exactly the rows, in the order, that carrying them row by row
gives."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import UnchangedBlock
from recordsync.state import StateStore
from recordsync.state.digests import fingerprint
from recordsync.state.snapshots import Snapshot, SnapshotWriter, file_reader, take
from recordsync.tuning import sizes

FP = fingerprint("{}", None, None, None)


@contextmanager
def flushing_every(rows: int) -> Iterator[None]:
    before = sizes.SNAPSHOT_FLUSH_ROWS
    sizes.SNAPSHOT_FLUSH_ROWS = rows
    try:
        yield
    finally:
        sizes.SNAPSHOT_FLUSH_ROWS = before


def _source(store: StateStore, n: int) -> tuple[Snapshot, bytes]:
    """A registered snapshot of ``n`` rows, taken; and its file's bytes."""
    w = SnapshotWriter(store, "src", "contacts", "r0")
    for i in range(n):
        if i % 3 == 2:  # a key that is not its match rule and value
            w.add((i * 7919 + 1, i), f"id:{i}", "name", f"Person {i}", 100 + i)
        else:
            w.add((i * 7919 + 1, i), f"email:p{i}@x.io", "email", f"p{i}@x.io", 100 + i)
    w.commit(FP)
    raw = w.path.read_bytes()
    snap = take(store, "src", "contacts", FP)
    assert snap is not None and snap.packed is not None
    return snap, raw


def _block(rows: list[int]) -> UnchangedBlock:
    idx = np.asarray(rows, dtype=np.int64)
    return UnchangedBlock("f.csv", idx + 2, idx, [], [], [], [])


def _replay(
    store: StateStore, source: Snapshot, pipeline: str, ops: list[tuple[str, list[int]]], bulk: bool
) -> SnapshotWriter:
    w = SnapshotWriter(store, pipeline, "contacts", "r1", carry_in_bulk=bulk)
    w.source = source
    for kind, rows in ops:
        if kind == "carry":
            w.add_from_block(_block(rows))
        elif kind == "add":
            for i in rows:
                w.add((i, i + 1), f"email:new{i}@x.io", "email", f"new{i}@x.io", 900 + i)
        else:  # add_many
            w.add_many(
                [(i, i + 2) for i in rows],
                [f"email:many{i}@x.io" for i in rows],
                ["email"] * len(rows),
                [f"many{i}@x.io" for i in rows],
                [700 + i for i in rows],
            )
    w.commit(FP)
    return w


def _rows(path: Path) -> pa.Table:
    return file_reader(path).read_all()


@st.composite
def plans(draw: st.DrawFn) -> tuple[int, int, list[tuple[str, list[int]]]]:
    """A snapshot size, a flush size and the writer's calls: runs of the snapshot's rows in
    its order (from where the last run ended, or anywhere), rows out of order, rows added."""
    n = draw(st.integers(1, 40))
    flush = draw(st.integers(1, 9))
    ops: list[tuple[str, list[int]]] = []
    at = 0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["next", "next", "next", "any", "add", "add_many"]))
        if kind == "next":
            m = draw(st.integers(0, max(0, n - at)))
            ops.append(("carry", list(range(at, at + m))))
            at += m
        elif kind == "any":
            ops.append(("carry", draw(st.lists(st.integers(0, n - 1), max_size=6))))
        else:
            ops.append((kind, draw(st.lists(st.integers(0, 99), max_size=5))))
    if draw(st.booleans()):  # the rest of the snapshot, in order
        ops.append(("carry", list(range(at, n))))
    return n, flush, ops


@settings(max_examples=150, deadline=None)
@given(plans())
def test_carrying_in_bulk_writes_what_carrying_row_by_row_writes(
    plan: tuple[int, int, list[tuple[str, list[int]]]],
) -> None:
    n, flush, ops = plan
    with tempfile.TemporaryDirectory() as tmp, StateStore(Path(tmp) / "state.db") as store:
        source, _ = _source(store, n)
        with flushing_every(flush):
            bulk = _replay(store, source, "bulk", ops, bulk=True)
            rows = _replay(store, source, "rows", ops, bulk=False)
        assert bulk.rows == rows.rows
        got, want = _rows(bulk.path), _rows(rows.path)
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist()


def test_a_snapshot_carried_whole_in_its_order_is_registered_as_its_own_file(
    tmp_path: Path,
) -> None:
    with StateStore(tmp_path / "state.db") as store, flushing_every(4):
        source, raw = _source(store, 11)
        ops: list[tuple[str, list[int]]] = [("carry", [0, 1, 2]), ("carry", [])]
        ops += [("carry", list(range(3, 9))), ("carry", [9, 10])]
        bulk = _replay(store, source, "bulk", ops, bulk=True)
        rows = _replay(store, source, "rows", ops, bulk=False)
        assert bulk.path.read_bytes() == raw  # the same file, byte for byte
        assert rows.path.read_bytes() != raw  # written again, row by row
        assert _rows(bulk.path).to_pylist() == _rows(rows.path).to_pylist()
        again = take(store, "bulk", "contacts", FP)  # registered, and taken as any other
        assert again is not None and len(again) == 11
        assert again.column("record_id", np.arange(11)) == list(range(100, 111))


def test_a_snapshot_not_carried_whole_is_not_its_own_file(tmp_path: Path) -> None:
    """A row missing at the end, a row added, a row twice: written as the rows it holds."""
    with StateStore(tmp_path / "state.db") as store:
        source, raw = _source(store, 6)
        cases: list[list[tuple[str, list[int]]]] = [
            [("carry", [0, 1, 2, 3, 4])],
            [("carry", [0, 1, 2, 3, 4, 5]), ("add", [7])],
            [("carry", [0, 1, 2]), ("carry", [2, 3, 4, 5])],
        ]
        for k, ops in enumerate(cases):
            bulk = _replay(store, source, f"bulk{k}", ops, bulk=True)
            rows = _replay(store, source, f"rows{k}", ops, bulk=False)
            assert bulk.path.read_bytes() != raw
            assert _rows(bulk.path).to_pylist() == _rows(rows.path).to_pylist()

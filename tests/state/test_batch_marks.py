"""Batch marks (recordsync.state.batch_marks): a read batch recognised as the snapshot's rows
without digesting its rows, and kept in the snapshot file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from recordsync.core.model import UnchangedBlock
from recordsync.read import SourceBatch
from recordsync.read.null_values import nulling
from recordsync.state import StateStore, snapshots
from recordsync.state.batch_marks import BatchMarks, run_digest, span_digests
from recordsync.state.digests import fingerprint, row_digests
from recordsync.state.snapshot_match import DigestIndex
from recordsync.state.snapshots import SnapshotWriter, take

FP = fingerprint("{}", None, None, None)
COLS = ["a", "b"]
cell = st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
rows_of = st.lists(st.tuples(cell, cell), min_size=1, max_size=12)


def batch_digest(batch: pa.RecordBatch, columns: list[str], fp: bytes) -> bytes | None:
    """The digest of the whole batch as one span."""
    got = span_digests(batch, columns, fp, max(batch.num_rows, 1))
    return None if got is None else got[0]


def _batch(rows: list[tuple[str | None, str | None]]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "a": pa.array([r[0] for r in rows], pa.string()),
            "b": pa.array([r[1] for r in rows], pa.string()),
        }
    )


@given(rows_of)
@example([("ab", "c"), ("x", None)])  # a byte moved between cells, a null
def test_a_batch_digest_names_the_cells_whatever_the_buffers(
    rows: list[tuple[str | None, str | None]],
) -> None:
    """The same cells give the same digest, also as a slice of a larger batch (offsets into
    shared buffers); any change of a cell gives another (a null is not an empty cell, a
    byte moved from one cell to the next is a change)."""
    batch = _batch(rows)
    mark = batch_digest(batch, COLS, FP)
    assert mark is not None and len(mark) == 16
    padded = _batch([("pad", None), *rows, (None, "pad")]).slice(1, len(rows))
    assert batch_digest(padded, COLS, FP) == mark
    changes = [
        [(("a" if r[0] is None else None), r[1]) if i == 0 else r for i, r in enumerate(rows)],
        [((r[0] or "") + "x", r[1]) if i == len(rows) - 1 else r for i, r in enumerate(rows)],
        [(r[0], "" if r[1] is None else None) if i == 0 else r for i, r in enumerate(rows)],
    ]
    if rows[0][0] and len(rows[0][0]) > 1:  # the last character moved to the next cell
        a, b = rows[0]
        changes.append([(a[:-1], a[-1] + (b or "")), *rows[1:]])
    for changed in changes:
        assert batch_digest(_batch(changed), COLS, FP) != mark
    assert batch_digest(batch, COLS, fingerprint("{ }", None, None, None)) != mark
    assert batch_digest(batch, ["b", "a"], FP) != mark
    assert batch_digest(_batch(rows + rows[-1:]), COLS, FP) != mark  # one row more


def _over(data: bytes, offsets: list[int], valid: list[bool]) -> pa.Array:
    """A string array built from its buffers: its null slots may span bytes of ``data``."""
    bitmap = np.packbits(np.array(valid, dtype=bool), bitorder="little").tobytes()
    return pa.Array.from_buffers(
        pa.string(),
        len(valid),
        [
            pa.py_buffer(bitmap),
            pa.py_buffer(np.array(offsets, "<i4").tobytes()),
            pa.py_buffer(data),
        ],
        null_count=valid.count(False),
    )


def test_bytes_under_a_null_never_make_other_cells_look_alike() -> None:
    """A null slot may lie over bytes of the data buffer: ``source.null_values`` makes its
    nulls with ``pc.if_else``, which leaves the replaced cell's text under the null. With
    ``NULL`` declared, the cells ``NULL, " a", " NULL"`` and ``"NULL ", "a ", NULL`` become
    ``null, " a", null`` and ``null, "a ", null`` over the same bytes (``"NULL a NULL"``) with
    the same value lengths; their digests must differ (else a changed span could pass for a
    mark). Cells over empty null slots hash alike however the array was built."""
    b = pa.array(["p", "q", "r"], pa.string())

    def nulled(cells: list[str]) -> pa.RecordBatch:
        raw = pa.record_batch({"a": pa.array(cells, pa.string()), "b": b})
        (sb,) = nulling(iter([SourceBatch("f", raw, np.arange(3), [])]), ["NULL"])
        return sb.batch

    one, two = nulled(["NULL", " a", " NULL"]), nulled(["NULL ", "a ", "NULL"])
    assert one.column("a").to_pylist() == [None, " a", None]
    assert two.column("a").to_pylist() == [None, "a ", None]
    assert batch_digest(one, COLS, FP) != batch_digest(two, COLS, FP)
    plain = pa.record_batch({"a": pa.array([None, " a", None], pa.string()), "b": b})
    empty_slots = pa.record_batch({"a": _over(b" a", [0, 0, 2, 2], [False, True, False]), "b": b})
    assert batch_digest(empty_slots, COLS, FP) == batch_digest(plain, COLS, FP)
    got, want = row_digests(one, COLS, FP), row_digests(plain, COLS, FP)
    assert got is not None and want is not None and (got[0] == want[0]).all()


@given(rows_of, st.integers(1, 5))
def test_each_span_s_digest_is_that_of_the_span_read_alone(
    rows: list[tuple[str | None, str | None]], size: int
) -> None:
    batch = _batch(rows)
    spans = span_digests(batch, COLS, FP, size)
    assert spans is not None and len(spans) == -(-len(rows) // size)
    for j, got in enumerate(spans):
        alone = _batch(rows[j * size : (j + 1) * size])
        assert got == batch_digest(alone, COLS, FP)
    assert span_digests(batch.slice(0, 0), COLS, FP, size) == []


def test_a_batch_with_a_column_without_text_has_no_digest() -> None:
    batch = pa.record_batch({"a": ["x"], "b": pa.array([b"\x00"], pa.binary())})
    assert batch_digest(batch, COLS, FP) is None


@given(st.dictionaries(st.binary(min_size=16, max_size=16), st.binary(min_size=16, max_size=16)))
def test_marks_read_back_as_written(marks: dict[bytes, bytes]) -> None:
    assert dict(BatchMarks.decode(BatchMarks(marks).encode())) == marks


def test_marks_of_the_wrong_size_are_none() -> None:
    good = BatchMarks({b"a" * 16: b"b" * 16}).encode()
    assert dict(BatchMarks.decode(good[:-1])) == {}
    assert dict(BatchMarks.decode(None)) == {}


def test_a_batch_with_a_row_without_digest_is_not_marked() -> None:
    batch = pa.record_batch({"a": ["x\x1fy", "z"], "b": ["1", "2"]})
    got = row_digests(batch, COLS, FP)
    assert got is not None and got[1].tolist() == [False, True]
    marks = BatchMarks()
    marks.add(batch_digest(batch, COLS, FP), *got)
    marks.add(None, got[0], np.ones(2, dtype=bool))
    assert not marks
    marks.add(b"m" * 16, got[0], np.ones(2, dtype=bool))
    assert marks[b"m" * 16] == run_digest(got[0][:, 0], got[0][:, 1])


def _digests(n: int, start: int = 0) -> np.ndarray:
    return np.array([[1000 + i, 7 * i + 1] for i in range(start, start + n)], dtype=np.uint64)


def _index(d: np.ndarray, memory_rows: int | None = None) -> DigestIndex:
    table = pa.table({"d0": d[:, 0], "d1": d[:, 1]})
    return DigestIndex(table.to_batches(max_chunksize=3), memory_rows=memory_rows)


@pytest.mark.parametrize("memory_rows", [None, 0])
def test_a_run_is_found_where_the_next_row_is_expected_or_not_at_all(
    memory_rows: int | None,
) -> None:
    """In memory or with the digests on disk (never sorted for it): the rows after the last
    one matched, if their digests give the run digest; nothing moves when they do not."""
    d = _digests(10)
    index = _index(d, memory_rows)
    first, rest = d[:4], d[4:]
    assert index.match_run(4, run_digest(rest[:4, 0], rest[:4, 1])) is None  # not here
    got = index.match_run(4, run_digest(first[:, 0], first[:, 1]))
    assert got is not None and got[0] == 0 and (got[1] == first).all()
    assert index.match_run(7, run_digest(rest[:, 0], rest[:, 1])) is None  # past the end
    got = index.match_run(6, run_digest(rest[:, 0], rest[:, 1]))
    assert got is not None and got[0] == 4 and (got[1] == rest).all()
    assert index._disk is None  # nothing sorted
    # after a run, a row is looked for where the run ended, as match() does
    index = _index(d, memory_rows)
    assert index.match_run(3, run_digest(d[:3, 0], d[:3, 1])) is not None
    assert index.match(d[3:5], np.ones(2, dtype=bool)).tolist() == [3, 4]


def test_a_run_over_a_digest_listed_twice_is_found_by_its_place() -> None:
    """Two rows exported alike, both with records of their own: looked up by digest far from
    its place neither is found (either could be the other); found as a run, each is the row
    at its place."""
    d = _digests(10)
    d[2] = d[1]
    index = _index(d)
    assert index.match(d[1:2], np.ones(1, dtype=bool)).tolist() == [1]  # at its place
    index = _index(d)
    index.match(d[7:10], np.ones(3, dtype=bool))  # the next row expected after row 9
    assert index.match(d[1:2], np.ones(1, dtype=bool)).tolist() == [-1]
    index = _index(d)
    got = index.match_run(4, run_digest(d[:4, 0], d[:4, 1]))
    assert got is not None and got[0] == 0


def _write(store: StateStore, run_id: str, n: int, marks: BatchMarks | None = None) -> None:
    writer = SnapshotWriter(store, "p", "contacts", run_id)
    d = _digests(n)
    for i in range(n):
        writer.add((int(d[i, 0]), int(d[i, 1])), f"email:e{i}@x.io", None, None, 100 + i)
    if marks is not None:
        writer.marks = marks
    writer.commit(FP)


def test_the_snapshot_file_keeps_the_marks_and_no_row_more(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        d = _digests(5)
        marks = BatchMarks()
        marks.add(b"b" * 16, d, np.ones(5, dtype=bool))
        _write(store, "r1", 5, marks)
        snap = take(store, "p", "contacts", FP)
        assert snap is not None and len(snap) == 5 == snap.table.num_rows
        assert dict(snap.marks) == dict(marks)
        assert all(b.num_rows for b in snap.table.to_batches())
        found, digests = snap.match_span(b"b" * 16, 5) or (None, None)
        assert found is not None and found.tolist() == [0, 1, 2, 3, 4]
        assert (digests == d).all()
        assert snap.match_span(b"c" * 16, 5) is None
        _write(store, "r2", 5)  # no marks: a file as an earlier recordsync wrote it
        snap = take(store, "p", "contacts", FP)
        assert snap is not None and len(snap) == 5 and not snap.marks
    finally:
        store.close()


def test_a_snapshot_carried_whole_is_copied_only_if_it_marks_every_batch_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row carried in order: the new snapshot is the old file, copied, when its marks
    name every batch this run read; with a batch it does not mark (a file written before
    marks, or a first batch read in parts), it is written anew with this run's marks."""
    copied: list[str] = []
    real = snapshots._copy_file

    def spy(fd: int, dst: Path) -> None:
        copied.append(dst.name)
        real(fd, dst)

    monkeypatch.setattr(snapshots, "_copy_file", spy)
    store = StateStore(tmp_path / "state.db")
    try:
        _write(store, "r1", 6)  # no marks
        rows = np.arange(6, dtype=np.int64)
        for run, copy in (("r2", False), ("r3", True)):
            old = take(store, "p", "contacts", FP)
            assert old is not None and len(old.marks) == (run == "r3")
            writer = SnapshotWriter(store, "p", "contacts", run)
            writer.source = old
            writer.marks.add(b"b" * 16, _digests(6), np.ones(6, dtype=bool))
            got = old.take(rows, ["key", "match_by", "match_value", "record_id"])
            writer.add_from_block(UnchangedBlock("c.csv", rows + 2, rows, *got.columns))
            writer.commit(FP)
            assert bool(copied) == copy
            copied.clear()
        snap = take(store, "p", "contacts", FP)
        assert snap is not None and len(snap) == 6 and list(snap.marks) == [b"b" * 16]
        assert snap.take(rows, ["record_id"]).column(0).to_pylist() == list(range(100, 106))
    finally:
        store.close()

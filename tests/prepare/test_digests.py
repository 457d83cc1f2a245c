"""Source-row digests copied onto prepared rows a list at a time, and the second pass's memory
(prepare/digests.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync import tuning
from recordsync.config import load_mapping
from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.core.model import PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.prepare import digest_scan
from recordsync.prepare import digests as digests_module
from recordsync.prepare.digests import _with_digests, prepare_digested
from recordsync.prepare.seen_log import KeptRows, Seen
from recordsync.read import SourceBatch
from recordsync.state import StateStore
from recordsync.state.batch_marks import BatchMarks
from recordsync.state.snapshots import Snapshot, SnapshotWriter, take
from recordsync.tuning import Tuning, native_memory, sizes

from .support import contacts, first_snapshot, nightly_pass

_U64 = st.integers(0, 2**64 - 1)


def _one_by_one(
    rows: list[PreparedRow], seen: Seen, positions: list[int]
) -> list[tuple[int, int] | None]:
    """The digests the rows got when they were set row by row (before lists)."""
    assert seen.digests is not None and seen.ok is not None
    line_of, pairs, has = seen.rows.tolist(), seen.digests.tolist(), seen.ok.tolist()
    out: list[tuple[int, int] | None] = []
    j = 0
    for r in rows:
        got = None
        if j < len(positions) and r.source.source_row == line_of[positions[j]]:
            i = positions[j]
            j += 1
            if has[i]:
                got = (pairs[i][0], pairs[i][1])
        out.append(got)
    return out


@given(
    st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=30),
    st.lists(st.integers(1, 7), min_size=1, max_size=30),
    st.data(),
)
def test_digests_set_a_list_at_a_time_are_those_set_row_by_row(
    lines: list[tuple[bool, bool, bool]], cuts: list[int], data: st.DataObject
) -> None:
    """Each batch row is a parsed row (taken or not: ``positions``) or a malformed line;
    digested or not. Whatever lists the rows come in, each row gets the digest it got when
    they came one by one."""
    kinds = [(2 + i, parsed, taken, ok) for i, (parsed, taken, ok) in enumerate(lines)]
    batch = [k for k in kinds if k[1]]
    n = len(batch)
    pairs = data.draw(st.lists(st.tuples(_U64, _U64), min_size=n, max_size=n))
    seen = Seen(
        "c.csv",
        np.array([k[0] for k in batch], dtype=np.int64),
        np.array(pairs, dtype=np.uint64).reshape(n, 2),
        np.array([k[3] for k in batch], dtype=bool),
        np.full(n, -1, dtype=np.int64),
    )
    positions = [i for i, k in enumerate(batch) if k[2]]
    wanted = {batch[i][0] for i in positions}
    rows = [  # the taken rows and the malformed lines, in line order
        PreparedRow(SourceRow("c.csv", k[0], {}), RowStatus.VALID)
        for k in kinds
        if k[0] in wanted or not k[1]
    ]
    want = _one_by_one(rows, seen, positions)
    blocks, at = [], 0
    for size in cuts:
        blocks.append(rows[at : at + size])
        at += size
    blocks = [b for b in blocks if b] + ([rows[at:]] if rows[at:] else [])
    out = list(_with_digests(iter(blocks), seen, np.array(positions, dtype=np.int64)))
    assert out == blocks
    assert [r.digest for r in rows] == want


class _Trims:
    """Stands in for the C library of :mod:`recordsync.tuning.native_memory`: counts the
    calls that hand freed heap pages back to the system."""

    def __init__(self) -> None:
        self.calls = 0

    def malloc_trim(self, pad: int) -> int:
        self.calls += 1
        return 1


@pytest.mark.parametrize("kept", [True, False])
def test_each_batch_of_the_second_pass_gives_the_freed_heap_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    """After every batch of the second pass, the heap's freed pages go back to the system,
    whether the pass reads the source again (the reader does it) or takes the rows the first
    pass kept (nothing is read: the pass does it). Without it, a large source's second pass
    over kept rows (a 1%-changed nightly run) grew in memory with the source: the rows
    carried into the next snapshot and the blocks found unchanged, freed, stayed resident."""
    rows = 40
    titles = ["A" if i % 7 else "B" for i in range(rows)]
    mapping, write_rows = contacts(tmp_path)

    def write(titles: list[str]) -> None:
        write_rows([(f"N{i}", f"e{i}@x.example", t) for i, t in enumerate(titles)])

    write(titles)
    store = StateStore(tmp_path / "state.db")
    try:
        first_snapshot(store, mapping, tmp_path)
        write(["C" if i in (1, 9, 30) else t for i, t in enumerate(titles)])  # 3 changed
        snapshot = take(store, "p", "contacts", b"fp")
        assert snapshot is not None and len(snapshot) == rows
        monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 3 if kept else 2)
        trims = _Trims()
        monkeypatch.setattr(native_memory, "_libc", trims)
        with tuning.using(Tuning.all()):
            second = prepare_digested(
                mapping, base_dir=tmp_path, schema=None, users=None, snapshot=snapshot, fp=b"fp"
            )  # the first pass (and the merge scan) ran: the second is left
            trims.calls = 0
            batches = 0
            items = []
            for got in second.lists:
                items += got
                batches += 1
                assert trims.calls >= batches - 1  # the batch before was given back
        assert batches == rows // 4
        assert trims.calls >= batches
        unchanged = sum(len(b) for b in items if isinstance(b, UnchangedBlock))
        assert unchanged == rows - 3
        assert sum(isinstance(r, PreparedRow) for r in items) == 3
    finally:
        store.close()


@pytest.mark.parametrize("changed", [None, (1, 3, 9, 30)])
@pytest.mark.parametrize("first", [1, 4, 5, 6])
def test_a_sending_run_prepares_the_first_rows_of_the_second_pass_on_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: tuple[int, ...] | None, first: int
) -> None:
    """With ``slice_rows`` (a sending run), the second pass prepares the first
    ``sizes.FIRST_SLICE_ROWS`` rows of the first batch (and the malformed lines among them)
    as a list of their own: the first chunk waits for their digests, mapping and validation
    only. Every item (rows with their digests, blocks found unchanged, the malformed line
    after row 5) is what whole batches give: a first run (no snapshot), and a nightly run
    that reads the source again (``changed``: those rows changed since the snapshot)."""
    rows = 40
    header = "Name,Email,Title\n"

    def write(titles: list[str]) -> None:
        lines = [f"N{i},e{i}@x.example,{t}\n" for i, t in enumerate(titles)]
        lines.insert(5, 'broken,"unclosed,x\n')  # a malformed line (line 7)
        (tmp_path / "c.csv").write_text(header + "".join(lines), encoding="utf-8")

    titles = ["A"] * rows
    write(titles)
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv}\nname: Name\n"
        "match_by: [email]\nfields:\n  email: Email\n  job_title: Title\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")
    store = StateStore(tmp_path / "state.db")
    try:
        snapshot = None
        if changed is not None:
            writer = SnapshotWriter(store, "p", "contacts", "r1")
            for i, r in enumerate(
                prepare_digested(
                    mapping, base_dir=tmp_path, schema=None, users=None, snapshot=None, fp=b"fp"
                )
            ):
                if isinstance(r, PreparedRow) and r.digest is not None and r.key is not None:
                    writer.add(r.digest, r.key, r.match_by, r.match_value, 100 + i)
            writer.commit(b"fp")
            write(["C" if i in changed else t for i, t in enumerate(titles)])
            snapshot = take(store, "p", "contacts", b"fp")
            assert snapshot is not None
            monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 1)  # the second pass reads again
        monkeypatch.setattr(sizes, "FIRST_SLICE_ROWS", first)

        marks: dict[int | None, BatchMarks] = {}

        def items(slice_rows: int | None) -> list[list[object]]:
            marks[slice_rows] = BatchMarks()
            got = nightly_pass(
                mapping, tmp_path, snapshot, slice_rows=slice_rows, marks=marks[slice_rows]
            )
            return list(got.lists)

        def flat(lists: list[list[object]]) -> list[tuple[object, ...]]:
            out: list[tuple[object, ...]] = []
            for item in (i for got in lists for i in got):
                if isinstance(item, UnchangedBlock):
                    out += [("unchanged", line) for line in item.source_rows.tolist()]
                else:
                    assert isinstance(item, PreparedRow)
                    r = item
                    out.append((r.source.source_row, r.status, r.payload, r.digest, r.error))
            return out

        sliced, whole = items(sizes.SLICE_ROWS), items(None)
        assert flat(sliced) == flat(whole)
        # the batch prepared in parts is marked as the whole batch the next run reads
        assert dict(marks[sizes.SLICE_ROWS]) == dict(marks[None]) and len(marks[None])
        head = [t[1] if t[0] == "unchanged" else t[0] for t in flat(sliced[:1])]
        # the first ``first`` rows (lines 2, 3, ...), and the malformed line 7 when it comes
        # before the rest's first row (line 8 once five rows are in the first list)
        rows_first = [2 + i + (i >= 5) for i in range(first)]
        assert sorted(head) == sorted(rows_first + [7] * (first >= 5))
    finally:
        store.close()


def _flat(lists: object) -> list[tuple[object, ...]]:
    """Prepared rows as (row, status, payload, digest, error); unchanged blocks as one
    ("unchanged", row) a row."""
    out: list[tuple[object, ...]] = []
    for item in (i for got in lists for i in got):  # type: ignore[attr-defined]
        if isinstance(item, UnchangedBlock):
            out += [("unchanged", line) for line in item.source_rows.tolist()]
        else:
            r = item.source.source_row
            out.append((r, item.status, item.payload, item.digest, item.error))
    return out


def _query_of_contacts(tmp_path: Path) -> MappingConfig:
    """The contacts mapping reading ``c.parquet`` through a DuckDB query (key ``Email``) in
    batches of 4 rows."""
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource:\n  query: SELECT * FROM 'c.parquet'\n"
        "  key: Email\n  name: c\n  batch_size: 4\nname: Name\nmatch_by: [email]\n"
        "fields:\n  email: Email\n  job_title: Title\n"
    )
    return load_mapping(tmp_path / "c.yaml")


def _second_read_swaps_two_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The source's second read (the second pass reading again) gives the same row numbers
    with the cells of its first two rows swapped, as a database may give rows that share a
    key (ORDER BY leaves them in any order), or as a file rewritten in place would."""
    real = digests_module.iter_source

    def swapped(*args: object, **kwargs: object) -> object:
        for i, sb in enumerate(real(*args, **kwargs)):  # type: ignore[arg-type]
            if i == 0 and sb.batch.num_rows >= 2:
                order = pa.array([1, 0, *range(2, sb.batch.num_rows)])
                sb = SourceBatch(sb.file, sb.batch.take(order), sb.rows, sb.bad)
            yield sb

    monkeypatch.setattr(digests_module, "iter_source", swapped)


@pytest.mark.parametrize("query", [False, True])
@pytest.mark.parametrize("first_run", [True, False])
def test_a_second_pass_reading_other_cells_in_the_same_rows_stops_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: bool, first_run: bool
) -> None:
    """A second pass that reads the source again must read what the first pass read: what
    the first pass decided of each row (found unchanged in the snapshot, its digest, its
    duplicates) is by its place. Two rows swapped between the passes (a query's rows that
    share a key, a file rewritten in place) stop the step with an error naming the cause,
    where before the first pass's decisions were taken for the other row's."""
    mapping, write = contacts(tmp_path)
    titles = [f"T{i}" for i in range(8)]
    write([(f"N{i}", f"e{i}@x.example", t) for i, t in enumerate(titles)])
    if query:
        mapping = _query_of_contacts(tmp_path)
    store = StateStore(tmp_path / "state.db")

    def last_snapshot() -> Snapshot | None:
        """None (a first run), or a snapshot of the rows before every title changed."""
        if first_run:
            return None
        write([(f"N{i}", f"e{i}@x.example", t) for i, t in enumerate(titles)])
        first_snapshot(store, mapping, tmp_path)
        write([(f"N{i}", f"e{i}@x.example", t + "!") for i, t in enumerate(titles)])
        snapshot = take(store, "p", "contacts", b"fp")  # taken once: made again each time
        assert snapshot is not None
        return snapshot

    try:
        monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 1)  # the second pass reads again
        # a query's rows past that are kept on disk instead, unless they cannot be (a full
        # disk): refused here, so that the query is run again
        monkeypatch.setattr(KeptRows, "add", lambda self, batch: False)
        got = [i for g in nightly_pass(mapping, tmp_path, last_snapshot()).lists for i in g]
        assert len(got) == len(titles)  # as it is: every row prepared
        snapshot = last_snapshot()
        _second_read_swaps_two_rows(monkeypatch)
        with pytest.raises(SourceError) as stop:
            list(nightly_pass(mapping, tmp_path, snapshot).lists)
        if query:
            assert stop.value.key == "source.key" and "share a key" in stop.value.message
        else:
            assert stop.value.key == "source.path" and "cells differ" in stop.value.message
    finally:
        store.close()


@pytest.mark.parametrize("seen_on_disk", [False, True])
@pytest.mark.parametrize("first_run", [True, False])
def test_a_query_runs_once_its_rows_past_the_budget_kept_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_run: bool, seen_on_disk: bool
) -> None:
    """Past ``UNMATCHED_KEEP_ROWS``, a query's first pass keeps the rows it did not find in a
    temporary file instead of running the query again: the second pass prepares exactly the
    rows the first read (as with every row kept in memory), whatever the database holds by
    then (here: every title changed, and a row added, after the first pass)."""
    _, write = contacts(tmp_path)
    rows = [(f"N{i}", f"e{i}@x.example", f"T{i}") for i in range(11)]
    write(rows)
    mapping = _query_of_contacts(tmp_path)
    store = StateStore(tmp_path / "state.db")
    reads: list[int] = []
    real = digests_module.iter_source

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    def last_snapshot() -> Snapshot | None:
        """None (a first run), or a snapshot of rows 0-2 as they are (the others not found)."""
        if first_run:
            return None
        write(rows[:3])
        first_snapshot(store, mapping, tmp_path)
        write(rows)
        return take(store, "p", "contacts", b"fp")  # taken once: made again each time

    try:
        kept = _flat(nightly_pass(mapping, tmp_path, last_snapshot()).lists)  # all in memory
        snapshot = last_snapshot()
        monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 2)
        if seen_on_disk:  # what the first pass learnt goes to its own file too
            monkeypatch.setattr(sizes, "SEEN_SPILL_ROWS", 3)
        monkeypatch.setattr(digests_module, "iter_source", counted)
        blocks = nightly_pass(mapping, tmp_path, snapshot)  # the first pass is over
        write([(n, e, t + "!") for n, e, t in rows] + [("Z", "z@x.example", "new")])
        assert _flat(blocks.lists) == kept and len(kept) == 11
        assert reads == []  # the second pass read no source: the first pass's rows, kept
        payloads = [t[2] for t in kept if t[0] != "unchanged"]
        assert all(p["fields"]["job_title"].startswith("T") for p in payloads)  # type: ignore[index]
    finally:
        store.close()


@pytest.mark.parametrize("demoted_changes", [False, True])
def test_a_querys_demoted_rows_are_fetched_by_their_digests_not_their_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demoted_changes: bool
) -> None:
    """A row found unchanged whose e-mail another row now has (here the winner of a duplicate
    pair whose loser never reached the snapshot) is demoted: prepared in full after all. A
    query's demoted rows are taken from the query run once more by their digests: a row
    written in the database meanwhile, which moves every row after it, changes nothing, and
    the second pass reads nothing. Only a demoted row that changed itself makes the second
    pass read the query again whole, and that read stops the step as the database moved."""
    _, write = contacts(tmp_path)
    rows = [(f"N{i:02d}", f"e{i}@x.example", f"T{i}") for i in range(11)]
    rows.append(("N99", "e5@x.example", "dup"))  # last in key order: it wins, N05 loses
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource:\n  query: SELECT * FROM 'c.parquet'\n"
        "  key: Name\n  name: c\n  batch_size: 4\nname: Name\nmatch_by: [email]\n"
        "fields:\n  email: Email\n  job_title: Title\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")
    store = StateStore(tmp_path / "state.db")

    def last_snapshot() -> Snapshot | None:
        write(rows)
        first_snapshot(store, mapping, tmp_path, failed={5})  # the loser, never sent
        return take(store, "p", "contacts", b"fp")  # taken once: made again each time

    try:
        expected = _flat(nightly_pass(mapping, tmp_path, last_snapshot()).lists)
        prepared = [t[:2] for t in expected if t[0] != "unchanged"]  # the rest unchanged
        assert prepared == [(6, RowStatus.DUPLICATE), (12, RowStatus.VALID)]
        snapshot = last_snapshot()
        scanned = digest_scan.iter_source
        reads: list[str] = []

        def moved(*args: object, **kwargs: object) -> object:
            reads.append("scan")
            if len(reads) == 2:  # the query run again: a row written in front of all
                changed = [*rows, ("A", "a@x.example", "new")]
                if demoted_changes:
                    changed[11] = ("N99", "e5@x.example", "dup, changed")
                write(changed)
            return scanned(*args, **kwargs)  # type: ignore[arg-type]

        def second(*args: object, **kwargs: object) -> object:
            reads.append("second")
            return real(*args, **kwargs)  # type: ignore[arg-type]

        real = digests_module.iter_source
        monkeypatch.setattr(digest_scan, "iter_source", moved)
        monkeypatch.setattr(digests_module, "iter_source", second)
        if demoted_changes:
            with pytest.raises(SourceError, match="other values than the first"):
                _flat(nightly_pass(mapping, tmp_path, snapshot).lists)
            assert reads == ["scan", "scan", "second"]
            return
        blocks = nightly_pass(mapping, tmp_path, snapshot)
        write([(n, e, t + "!") for n, e, t in rows])  # and every title, before the second pass
        assert _flat(blocks.lists) == expected
        assert reads == ["scan", "scan"]  # the first pass, the demoted rows; no second read
    finally:
        store.close()


def test_a_query_whose_rows_cannot_be_kept_on_disk_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No temporary file to be had (a full disk, no TMPDIR): the warning says so, and the
    second pass reads the query again, as before the file existed."""
    _, write = contacts(tmp_path)
    write([(f"N{i}", f"e{i}@x.example", f"T{i}") for i in range(9)])
    mapping = _query_of_contacts(tmp_path)
    expected = _flat(nightly_pass(mapping, tmp_path, None).lists)

    def no_file(self: KeptRows) -> None:
        raise OSError(28, "No space left on device")

    reads: list[int] = []
    real = digests_module.iter_source

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sizes, "UNMATCHED_KEEP_ROWS", 2)
    monkeypatch.setattr(KeptRows, "__init__", no_file)
    monkeypatch.setattr(digests_module, "iter_source", counted)
    assert _flat(nightly_pass(mapping, tmp_path, None).lists) == expected
    assert reads == [1]  # read again
    assert "could not be kept on disk ([Errno 28] No space left on device)" in caplog.text

"""The first pass of the digested path (recordsync.prepare.digest_scan): a changed row taking
the key of a row found unchanged demotes that row (prepared in full, grouped with it for the
duplicate rules), the key check a batch of the snapshot at a time, with arrays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recordsync.prepare.digest_scan as digest_scan
from recordsync.config import load_mapping
from recordsync.core.model import PreparedRow, UnchangedBlock
from recordsync.prepare.digest_scan import Scan
from recordsync.prepare.digests import prepare_digested
from recordsync.prepare.dups import ROW_BITS
from recordsync.prepare.seen_log import Seen, SeenLog
from recordsync.state import StateStore
from recordsync.state.batch_marks import BatchMarks
from recordsync.state.snapshots import Snapshot, SnapshotWriter, take
from recordsync.tuning import sizes

from .support import contacts, first_snapshot, nightly_pass


def _outcome(items: Any) -> list[tuple[int, str, str | None]]:
    """Every source row of a nightly pass: (line, status, key), ``unchanged`` for the rows
    of the blocks found unchanged."""
    out: list[tuple[int, str, str | None]] = []
    for got in items.lists:
        for item in got:
            if isinstance(item, UnchangedBlock):
                out += [(line, "unchanged", None) for line in item.source_rows.tolist()]
            else:
                assert isinstance(item, PreparedRow)
                out.append((item.source.source_row, item.status.value, item.key))
    return sorted(out)


@pytest.mark.parametrize("kept", [100_000, 0])
def test_a_changed_row_taking_a_found_rows_key_demotes_it_across_snapshot_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    """Line 10 takes the e-mail of line 20, which is unchanged and found in the snapshot:
    line 20 is demoted (prepared in full) and grouped with line 10 under the e-mail, so the
    duplicate rules keep the first (line 10) and report line 20 a duplicate. The snapshot
    also holds a later row with that e-mail that no source row matched (and rows in batches
    of 4): the first snapshot row with the key decides, as it always did. The snapshot's keys
    checked against the keys of the rows not found (``kept``) or each hashed (0)."""
    monkeypatch.setattr(sizes, "SNAPSHOT_FLUSH_ROWS", 4)
    monkeypatch.setattr(sizes, "CLASH_KEYS_KEPT", kept)
    rows = 30
    emails = [f"e{i}@x.example" for i in range(rows)]

    def write(emails: list[str]) -> None:
        lines = [f"N{i},{e},T\n" for i, e in enumerate(emails)]
        (tmp_path / "c.csv").write_text("Name,Email,Title\n" + "".join(lines))

    write(emails)
    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv, batch_size: 7}\nname: Name\n"
        "match_by: [email]\nduplicates: first\nfields:\n  email: Email\n  job_title: Title\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")
    store = StateStore(tmp_path / "state.db")
    try:
        writer = SnapshotWriter(store, "p", "contacts", "r1")
        for i, r in enumerate(
            prepare_digested(
                mapping, base_dir=tmp_path, schema=None, users=None, snapshot=None, fp=b"fp"
            )
        ):
            assert isinstance(r, PreparedRow) and r.digest is not None and r.key is not None
            writer.add(r.digest, r.key, r.match_by, r.match_value, 100 + i)
        # a later snapshot row with line 20's e-mail and a digest no source row has
        writer.add((1, 2), "other", "email", emails[18], 999)
        writer.commit(b"fp")
        changed = list(emails)
        changed[8] = emails[18]  # line 10 takes line 20's e-mail
        write(changed)
        snapshot = take(store, "p", "contacts", b"fp")
        assert snapshot is not None and len(snapshot) == rows + 1
        assert len(list(snapshot.hash_batches("match"))) == 8  # batches of 4 rows
        got = _outcome(
            prepare_digested(
                mapping, base_dir=tmp_path, schema=None, users=None, snapshot=snapshot, fp=b"fp"
            )
        )
    finally:
        store.close()
    key = f"email:{emails[18]}"
    want: list[tuple[int, str, str | None]] = [
        (2 + i, "unchanged", None) for i in range(rows) if i not in (8, 18)
    ]
    want += [(10, "valid", key), (20, "duplicate", key)]
    assert got == sorted(want)


def _clashes_before(
    seen: SeenLog,
    fidx: dict[str, int],
    groups: dict[int, list[int]],
    hashes: list[npt.NDArray[np.int64]],
    ids: list[npt.NDArray[np.int64]],
    snap: list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.bool_]]],
    demoted: list[int],
) -> None:
    """The key check as it was made with dictionaries (the reference)."""
    h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
    if not len(h_all):
        return
    wanted = np.unique(h_all)
    first: dict[int, int] = {}
    for start, h, has in snap:
        at = np.minimum(np.searchsorted(wanted, h), len(wanted) - 1)
        hit = np.flatnonzero(wanted[at] == h)
        if not len(hit):
            continue
        rows = np.flatnonzero(has)[hit] + start
        for hv, row in zip(h[hit].tolist(), rows.tolist(), strict=True):
            first.setdefault(hv, row)
    if not first:
        return
    wanted_rows = np.unique(np.fromiter(first.values(), np.int64, len(first)))
    owner: dict[int, int] = {}
    for s in seen:
        at = np.minimum(np.searchsorted(wanted_rows, s.found), len(wanted_rows) - 1)
        hit = np.flatnonzero((s.found >= 0) & (wanted_rows[at] == s.found))
        rid = (np.int64(fidx[s.file]) << ROW_BITS) | s.rows[hit]
        owner.update(zip(s.found[hit].tolist(), rid.tolist(), strict=True))
    known = np.isin(h_all, np.fromiter(first, np.int64, len(first)))
    for hv, rid in zip(h_all[known].tolist(), id_all[known].tolist(), strict=True):
        other = owner.get(first[hv], -1)
        if other < 0:
            continue
        demoted.append(other)
        group = groups.setdefault(hv, [rid])
        if other not in group:
            group.append(other)
            group.sort()


_HASH = st.integers(-2, 2).map(lambda h: h * (2**61))  # few values, extreme ones too


@settings(max_examples=300, deadline=None)
@given(
    snap_keys=st.lists(st.none() | _HASH, min_size=1, max_size=25),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=10),
    source=st.lists(st.tuples(st.just(-1) | st.integers(0, 24), _HASH), min_size=1, max_size=40),
    batch=st.integers(1, 7),
    limit=st.sampled_from([3, 1000]),
)
def test_the_key_check_with_arrays_decides_as_it_did_with_dictionaries(
    snap_keys: list[int | None],
    cuts: list[int],
    source: list[tuple[int, int]],
    batch: int,
    limit: int,
) -> None:
    """Random snapshots (keys repeated or missing, cut into batches) and source rows (each
    found at a snapshot row, a row found twice too, or not found with a key hash; in two
    files, the log in memory or on disk): the same rows demoted in the same order, and the
    same groups in the same order, as the dictionaries' check."""
    n = len(snap_keys)
    snap: list[tuple[int, npt.NDArray[np.int64], npt.NDArray[np.bool_]]] = []
    start = 0
    for size in [*cuts, n]:
        part = snap_keys[start : start + size]
        if not part:
            break
        has = np.array([k is not None for k in part], dtype=np.bool_)
        h = np.array([k for k in part if k is not None], dtype=np.int64)
        snap.append((start, h, has))
        start += len(part)
    found = [f % n if f >= 0 else -1 for f, _ in source]
    logs = SeenLog(limit=limit), SeenLog(limit=limit)
    fidx = {"a.csv": 0, "b.csv": 1}
    half = len(source) // 2
    hashes: list[npt.NDArray[np.int64]] = []
    ids: list[npt.NDArray[np.int64]] = []
    for log in logs:
        for f, (lo, hi) in zip(fidx, ((0, half), (half, len(source))), strict=True):
            for b in range(lo, hi, batch):
                at = np.arange(b, min(b + batch, hi))
                rows = at - lo + 2
                log.append(Seen(f, rows, None, None, np.array(found, np.int64)[at]))
                if log is logs[0]:  # the rows not found, with their key hashes
                    slow = at[np.array(found, np.int64)[at] < 0]
                    hashes.append(np.array([source[i][1] for i in slow], dtype=np.int64))
                    ids.append((np.int64(fidx[f]) << ROW_BITS) | (slow - lo + 2))
    h_all, id_all = np.concatenate(hashes), np.concatenate(ids)
    groups_before: dict[int, list[int]] = {}
    for hv, rid in zip(h_all.tolist(), id_all.tolist(), strict=True):
        groups_before.setdefault(hv, []).append(rid)
    groups_before = {h: g for h, g in groups_before.items() if len(g) > 1}
    groups_now = {h: list(g) for h, g in groups_before.items()}
    demoted_before: list[int] = []
    demoted_now: list[int] = []

    _clashes_before(logs[0], fidx, groups_before, hashes, ids, snap, demoted_before)
    scan = Scan.__new__(Scan)
    scan.seen, scan._fidx = logs[1], fidx
    scan._clashes(groups_now, hashes, ids, iter(snap), demoted_now)

    assert demoted_now == demoted_before
    assert list(groups_now.items()) == list(groups_before.items())


def _flat(items: Any) -> list[tuple[object, ...]]:
    """Every item of a pass as it comes: a block's rows with their snapshot rows and record
    ids, a prepared row with its status, key, payload and digest."""
    out: list[tuple[object, ...]] = []
    for got in items.lists:
        for item in got:
            if isinstance(item, UnchangedBlock):
                ids = item.record_ids.to_pylist()
                for line, at, rid in zip(
                    item.source_rows.tolist(), item.snapshot_rows.tolist(), ids, strict=True
                ):
                    out.append(("unchanged", line, at, rid))
            else:
                assert isinstance(item, PreparedRow)
                r = item
                out.append((r.source.source_row, r.status.value, r.key, r.payload, r.digest))
    return out


_EDITS: dict[str, Any] = {
    "unchanged": lambda rows: rows,
    "a cell": lambda rows: [(n, e, "Z" if i == 9 else t) for i, (n, e, t) in enumerate(rows)],
    "a row inserted": lambda rows: [*rows[:10], ("New", "new@x.example", "A"), *rows[10:]],
    "a row removed": lambda rows: rows[:10] + rows[11:],
    "two rows swapped": lambda rows: [*rows[:9], rows[10], rows[9], *rows[11:]],
    "rows moved across batches": lambda rows: [rows[30], *rows[1:30], rows[0], *rows[31:]],
    "a row exported twice": lambda rows: [*rows[:6], rows[5], *rows[6:]],
    "the last rows removed": lambda rows: rows[:-2],
    "a row that failed last time": lambda rows: rows,  # not in the snapshot (below)
}


@pytest.mark.parametrize("edit", list(_EDITS))
@pytest.mark.parametrize(("memory_rows", "span"), [(None, None), (5, None), (None, 2), (5, 3)])
def test_batches_found_by_their_marks_decide_as_their_rows_digested_one_by_one(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: str,
    memory_rows: int | None,
    span: int | None,
) -> None:
    """A nightly pass over an export read in the batches of the run before (of 4 rows; marked
    a span of ``span`` rows at a time, default: the whole batch): every item (rows found
    unchanged with their snapshot rows and record ids, rows prepared with their digests) is
    what digesting each row gives, whatever changed; in an unchanged export no row is
    digested, a changed row or one missing from the snapshot has the rows of its span
    digested, and the marks the pass leaves are the ones it found."""
    if memory_rows is not None:  # the snapshot's digests on disk
        monkeypatch.setattr(sizes, "SNAPSHOT_MEMORY_ROWS", memory_rows)
    if span is not None:
        monkeypatch.setattr(sizes, "MARK_ROWS", span)
    spans = 10 * len(range(0, 4, span or 4))
    rows = [(f"N{i}", f"e{i}@x.example", "A" if i % 7 else "B") for i in range(40)]
    mapping, write = contacts(tmp_path)
    write(rows)
    store = StateStore(tmp_path / "state.db")
    try:
        failed = (9,) if edit == "a row that failed last time" else ()
        first = first_snapshot(store, mapping, tmp_path, failed)
        assert len(first.marks) == spans
        write(_EDITS[edit](rows))
        digested: list[int] = []
        real = digest_scan.row_digests

        def counting(batch: Any, *args: Any) -> Any:
            digested.append(batch.num_rows)
            return real(batch, *args)

        monkeypatch.setattr(digest_scan, "row_digests", counting)
        passes = {}
        snapshot = take(store, "p", "contacts", b"fp")
        assert snapshot is not None and len(snapshot.marks) == spans
        unmarked = Snapshot(snapshot.table)  # the same rows, no marks
        for marked, snap in ((True, snapshot), (False, unmarked)):
            digested.clear()
            left = BatchMarks()
            items = nightly_pass(mapping, tmp_path, snap, marks=left)
            passes[marked] = (_flat(items), dict(left), list(digested))
        (fast, fast_marks, fast_digested), (slow, slow_marks, slow_digested) = (
            passes[True],
            passes[False],
        )
        assert fast == slow
        assert fast_marks == slow_marks
        assert sum(slow_digested) == len(_EDITS[edit](rows))
        if edit == "unchanged":
            assert fast_digested == [] and len(fast_marks) == spans
            assert {t[0] for t in fast} == {"unchanged"}
        elif edit in ("a cell", "a row that failed last time"):  # row 9: the second of 8..11
            assert fast_digested == [{None: 4, 2: 2, 3: 3}[span]]  # the span of that row
    finally:
        store.close()


def test_a_cell_moved_over_null_values_bytes_is_not_taken_for_its_mark(tmp_path: Path) -> None:
    """``source.null_values`` nulls a cell and leaves its text under the null. With ``NULL``
    declared, titles ``NULL, " a", " NULL", x`` one night and ``"NULL ", "a ", NULL, x`` the
    next lie over the same bytes with the same lengths; the second title changed, so the
    batch's mark (made the night before) must not take the rows for the snapshot's: the
    pass decides as digesting each row does, and prepares the changed row."""
    def write(titles: list[str]) -> None:
        names = [f"N{i}" for i in range(4)]
        emails = [f"e{i}@x.example" for i in range(4)]
        table = pa.table({"Name": names, "Email": emails, "Title": titles})
        pq.write_table(table, tmp_path / "c.parquet")

    (tmp_path / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.parquet, batch_size: 4, null_values: ['NULL']}\n"
        "name: Name\nmatch_by: [email]\nfields:\n  email: Email\n"
        "  job_title: {column: Title, trim: false}\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")
    write(["NULL", " a", " NULL", "x"])
    store = StateStore(tmp_path / "state.db")
    try:
        assert len(first_snapshot(store, mapping, tmp_path).marks) == 1
        write(["NULL ", "a ", "NULL", "x"])
        snapshot = take(store, "p", "contacts", b"fp")
        assert snapshot is not None and len(snapshot.marks) == 1
        fast = _flat(nightly_pass(mapping, tmp_path, snapshot, marks=BatchMarks()))
        slow = _flat(nightly_pass(mapping, tmp_path, Snapshot(snapshot.table)))
        assert fast == slow
        assert [t[0] for t in fast] == ["unchanged", 2, "unchanged", "unchanged"]
        assert fast[1][3]["fields"]["job_title"] == "a "  # kept untrimmed: a value changed
    finally:
        store.close()

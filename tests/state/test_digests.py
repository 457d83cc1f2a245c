"""Source-row digests and snapshots (recordsync.state.digests, recordsync.state.snapshots)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from recordsync.core.model import UnchangedBlock
from recordsync.state import StateStore
from recordsync.state.digests import fingerprint, row_digests, supported
from recordsync.state.snapshot_match import DigestIndex, take_rows
from recordsync.state.snapshots import Snapshot, SnapshotWriter, take
from recordsync.tuning import sizes as tuning_sizes

FP = fingerprint("{}", None, None, None)
COLS = ["a", "b"]


def digests(a: list[str | None], b: list[str | None], fp: bytes = FP) -> np.ndarray:
    got = row_digests(pa.record_batch({"a": a, "b": b}), COLS, fp)
    assert got is not None
    return got[0]


cell = st.one_of(
    st.none(),
    st.just("\x00"),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x1f")),
)


@given(st.lists(st.tuples(cell, cell), min_size=1, max_size=20))
@example([(None, "x"), ("\x00", "x")])  # a null and the cell "\x00" join alike
def test_equal_cells_give_equal_digests_and_any_change_another(rows: list[tuple]) -> None:
    """Rows that both have a digest have the same one exactly when their cells are the same;
    a row with a digest never shares it with a row without one."""
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    got = row_digests(pa.record_batch({"a": a, "b": b}), COLS, FP)
    assert got is not None
    d, ok = got
    assert (digests(a, b) == d).all()  # stable
    for i, (x, y) in enumerate(rows):
        assert ok[i] == ("\x00" not in (x, y))
        for j, (x2, y2) in enumerate(rows):
            if ok[i] and ok[j]:
                assert (d[i] == d[j]).all() == ((x, y) == (x2, y2))


def test_blank_null_and_moved_separators_are_told_apart() -> None:
    d = digests(["", None, "x", "xy", "x"], [None, "", "yz", "z", None])
    assert len({tuple(r) for r in d.tolist()}) == 5


def test_a_cell_with_the_separator_gets_no_digest() -> None:
    got = row_digests(pa.record_batch({"a": ["x\x1fy", "x"], "b": ["z", "y\x1fz"]}), COLS, FP)
    assert got is not None
    assert got[1].tolist() == [False, False]
    got = row_digests(pa.record_batch({"a": ["x"], "b": ["y"]}), COLS, FP)
    assert got is not None and got[1].tolist() == [True]


def test_a_null_beside_a_cell_with_the_separator_keeps_its_digest() -> None:
    got = row_digests(pa.record_batch({"a": ["x\x1fy", None], "b": [None, "z"]}), COLS, FP)
    assert got is not None
    assert got[1].tolist() == [False, True]


def test_the_salt_covers_fingerprint_column_types_and_names() -> None:
    base = digests(["1"], ["2"])
    other_fp = fingerprint('{"x": 1}', None, None, None)
    assert not (digests(["1"], ["2"], other_fp) == base).all()
    ints = row_digests(pa.record_batch({"a": [1], "b": ["2"]}), COLS, FP)
    assert ints is not None and not (ints[0] == base).all()
    renamed = row_digests(pa.record_batch({"a": ["1"], "c": ["2"]}), ["a", "c"], FP)
    assert renamed is not None and not (renamed[0] == base).all()


def test_fingerprint_covers_schema_users_and_owners_file(tmp_path: Path) -> None:
    owners = tmp_path / "owners.yaml"
    owners.write_text("a@x.io: 1\n")
    fps = {
        fingerprint("{}", None, None, None),
        fingerprint("{}", {"fields": [1]}, None, None),
        fingerprint("{}", None, [{"id": 1, "email": "a@x.io"}], None),
        fingerprint("{}", None, None, owners),
    }
    owners.write_text("a@x.io: 2\n")
    fps.add(fingerprint("{}", None, None, owners))
    assert len(fps) == 5


def test_nested_columns_are_not_digested() -> None:
    batch = pa.record_batch({"a": [[1, 2]], "b": ["x"]})
    assert not supported(batch.schema, COLS)
    assert supported(pa.record_batch({"a": [1.5], "b": [True]}).schema, COLS)


def _write(store: StateStore, run_id: str, rows: list[tuple[str, str]], fp: bytes = FP) -> None:
    w = SnapshotWriter(store, "p", "contacts", run_id)
    d = digests([r[0] for r in rows], [r[1] for r in rows])
    for i, (a, _) in enumerate(rows):
        w.add((int(d[i, 0]), int(d[i, 1])), f"email:{a}", "email", a, 100 + i)
    w.commit(fp)


def test_a_snapshot_is_taken_once_and_only_with_its_fingerprint(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        _write(store, "r1", [("a@x.io", "A"), ("b@x.io", "B")])
        snap = take(store, "p", "contacts", FP)
        assert snap is not None and len(snap) == 2
        d = digests(["b@x.io", "c@x.io", "a@x.io"], ["B", "C", "A"])
        found = snap.match(d, np.ones(3, dtype=bool))
        assert snap.column("record_id", found[found >= 0]) == [101, 100]
        assert found[1] == -1
        assert take(store, "p", "contacts", FP) is None  # taken: gone
        _write(store, "r2", [("a@x.io", "A")])
        assert take(store, "p", "contacts", fingerprint("{}", {"v": 2}, None, None)) is None
        assert take(store, "p", "contacts", FP) is None  # a mismatch drops it too
        assert not any((tmp_path / "snapshots").iterdir())
    finally:
        store.close()


def test_a_digest_listed_twice_is_matched_only_at_its_place(tmp_path: Path) -> None:
    """Two snapshot rows alike (each with a record): a row at the place of one is that
    one; looked up elsewhere by its digest, it is neither (either could be taken for it)."""
    store = StateStore(tmp_path / "state.db")
    try:
        rows = [("a@x.io", "A"), ("a@x.io", "A"), *((f"{c}@x.io", c.upper()) for c in "bcdefgh")]
        _write(store, "r1", rows)
        snap = take(store, "p", "contacts", FP)
        assert snap is not None
        ok = np.ones(2, dtype=bool)
        assert snap.match(digests(["a@x.io", "b@x.io"], ["A", "B"]), ok).tolist() == [0, 2]
        snap = take(store, "p", "contacts", FP) or snap  # taken once: match anew
        snap = Snapshot(snap.table)
        far = [f"{c}@x.io" for c in "bcdefgh"] + ["x@x.io", "y@x.io", "z@x.io", "a@x.io"]
        found = snap.match(digests(far, [e[0].upper() for e in far]), np.ones(11, dtype=bool))
        assert found.tolist() == [2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1]
    finally:
        store.close()


def test_blocks_are_carried_into_the_next_snapshot(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        _write(store, "r1", [("a@x.io", "A"), ("b@x.io", "B"), ("c@x.io", "C")])
        old = take(store, "p", "contacts", FP)
        assert isinstance(old, Snapshot)
        w = SnapshotWriter(store, "p", "contacts", "r2")
        w.source = old
        idx = np.array([2, 0])
        w.add_from_block(UnchangedBlock("f.csv", [4, 2], idx, [], [], [], []))
        w.commit(FP)
        new = take(store, "p", "contacts", FP)
        assert new is not None
        assert sorted(new.column("key", np.arange(len(new)))) == ["email:a@x.io", "email:c@x.io"]
    finally:
        store.close()


def test_a_discarded_writer_leaves_nothing(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        w = SnapshotWriter(store, "p", "contacts", "r1")
        w.add((1, 2), "k", None, None, 5)
        w.discard()
        assert take(store, "p", "contacts", FP) is None
        assert not any((tmp_path / "snapshots").iterdir())
    finally:
        store.close()


def test_a_snapshot_left_half_written_by_a_dead_run_is_removed(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        dead = SnapshotWriter(store, "p", "contacts", "r1")
        dead.add((1, 2), "k", None, None, 5)  # the process "dies" here: no commit, no discard
        left = dead._tmp
        assert left.exists()
        SnapshotWriter(store, "p", "contacts", "r2").discard()
        assert not left.exists()
    finally:
        store.close()


def test_a_step_fingerprint_changes_with_the_users_even_without_an_owner_column() -> None:
    """User-id fields are checked against the users list: a user who left makes rows
    invalid, so the list is part of every step's fingerprint."""
    from recordsync.config.loader import load_mapping
    from recordsync.prepare.fingerprint import step_fingerprint

    repo = Path(__file__).resolve().parents[2]
    config = load_mapping(repo / "configs" / "companies.yaml").model_copy(update={"owner": None})
    assert config.owner is None
    base = repo / "configs"
    schema = [{"slug": "companies", "fields": []}]
    one = step_fingerprint(config, base, schema, [{"id": "u1", "email": "a@x.io"}])
    two = step_fingerprint(config, base, schema, [{"id": "u2", "email": "a@x.io"}])
    assert one is not None and two is not None and one != two
    other_schema = [{"slug": "companies", "fields": [{"key": "x"}]}]
    assert step_fingerprint(config, base, other_schema, [{"id": "u1", "email": "a@x.io"}]) != one
    deals = load_mapping(repo / "configs" / "deals.yaml")  # a ref field: never digested
    assert step_fingerprint(deals, base, schema, []) is None


def _snapshot(pairs: list[tuple[int, int]]) -> Snapshot:
    n = len(pairs)
    return Snapshot(
        pa.table(
            {
                "d0": pa.array([p[0] for p in pairs], pa.uint64()),
                "d1": pa.array([p[1] for p in pairs], pa.uint64()),
                "key": [f"k{i}" for i in range(n)],
                "match_by": ["email"] * n,
                "match_value": [f"v{i}" for i in range(n)],
                "record_id": pa.array(range(n), pa.int64()),
            }
        )
    )


digest_pair = st.tuples(st.integers(0, 3), st.integers(0, 3))  # small: shared halves, twins


@given(
    st.lists(digest_pair, max_size=30),
    st.lists(st.tuples(digest_pair, st.booleans()), max_size=40),
    st.lists(st.integers(1, 10), min_size=1, max_size=5),
)
def test_match_finds_the_one_snapshot_row_with_the_digest(
    snap_pairs: list[tuple[int, int]],
    queries: list[tuple[tuple[int, int], bool]],
    sizes: list[int],
) -> None:
    """Whatever the order of the rows (as the snapshot left them, or not), in batches of any
    size: a row matches the snapshot row with its digest, none when that digest is listed
    twice or the row has no digest."""
    _check_matches(_snapshot(snap_pairs).match, snap_pairs, queries, sizes)


@given(
    st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=30),
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=40),
    st.lists(st.integers(1, 10), min_size=1, max_size=5),
)
def test_an_index_of_distinct_first_halves_matches_in_order_and_out_of_it(
    firsts: list[int],
    picks: list[tuple[int, bool]],
    sizes: list[int],
) -> None:
    """First halves all different (the index sorts them only when a row is looked for out
    of the snapshot's order): the snapshot's rows in order, then rows drawn anywhere, some
    of them absent."""
    snap_pairs = [(h0, i % 3) for i, h0 in enumerate(firsts)]
    queries = [(snap_pairs[k] if k < len(snap_pairs) else (k, 7), has) for k, has in picks]
    _check_matches(_snapshot(snap_pairs).match, snap_pairs, queries, sizes)


@given(
    st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 3)), max_size=30),
    st.lists(st.tuples(digest_pair, st.booleans()), max_size=40),
    st.lists(st.integers(1, 10), min_size=1, max_size=5),
    st.integers(1, 7),
    st.sampled_from([0, 1, 32]),
)
def test_an_index_sorted_on_disk_matches_as_one_in_memory(
    snap_pairs: list[tuple[int, int]],
    queries: list[tuple[tuple[int, int], bool]],
    sizes: list[int],
    batch_rows: int,
    scans: int,
) -> None:
    """Past its memory limit (here 0 rows) the index sorts the digests into a file, through
    partitions by their top bits (first halves drawn over the whole range, and shared),
    after ``scans`` look-ups made by reading the file's digests: every row matches as above,
    across the snapshot file's record batches."""
    snap_pairs = snap_pairs + [(h0, h1 + 1) for h0, h1 in snap_pairs[:3]]  # shared firsts
    table = _snapshot(snap_pairs).table
    batches = table.to_batches(max_chunksize=batch_rows)
    before, tuning_sizes.DIGEST_SCANS = tuning_sizes.DIGEST_SCANS, scans
    try:
        index = DigestIndex(batches, memory_rows=0)
    finally:
        tuning_sizes.DIGEST_SCANS = before
    assert index.on_disk or not snap_pairs
    near = [((h0, h1), has) for ((h0, h1), has) in queries] + [
        ((snap_pairs[i % len(snap_pairs)][0], h1), has)
        for i, ((_, h1), has) in enumerate(queries)
        if snap_pairs
    ]
    _check_matches(index.match, snap_pairs, near, sizes)


def _check_matches(
    match: Any,
    snap_pairs: list[tuple[int, int]],
    queries: list[tuple[tuple[int, int], bool]],
    sizes: list[int],
) -> None:
    """Each row matches a snapshot row with its digest: the one row with it, or, when the
    snapshot lists it twice, one within 3 rows of the row's place (the row after the last
    one found, counting the rows since) or none; no row without a digest, or whose digest is
    not there, matches."""
    rows_of: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(snap_pairs):
        rows_of.setdefault(p, []).append(i)
    # the snapshot's own rows in order first (an unchanged export), then the drawn ones
    stream = [(p, True) for p in snap_pairs] + queries
    at = 0
    k = 0
    after = 0  # the row after the last one found
    while at < len(stream):
        part = stream[at : at + sizes[k % len(sizes)]]
        at, k = at + len(part), k + 1
        d = np.array([p for p, _ in part], dtype=np.uint64).reshape(-1, 2)
        ok = np.array([has for _, has in part], dtype=bool)
        got = match(d, ok).tolist()
        for i, ((p, has), row) in enumerate(zip(part, got, strict=True)):
            rows = rows_of.get(p, []) if has else []
            if len(rows) == 1:
                assert row == rows[0]
            elif not rows:
                assert row == -1
            else:
                assert row == -1 or (row in rows and abs(row - (after + i)) <= 3)
        found = [r for r in got if r >= 0]
        if found:
            after = found[-1] + 1


@given(st.lists(st.integers(0, 9), max_size=12))
def test_snapshot_rows_are_those_asked_for(idx: list[int]) -> None:
    snap = _snapshot([(i, i) for i in range(10)])
    got = snap.take(np.array(idx, dtype=np.int64))
    assert got.column("key").to_pylist() == [f"k{i}" for i in idx]
    consecutive = snap.take(np.arange(3, 7, dtype=np.int64), ["record_id"])
    assert consecutive.column("record_id").to_pylist() == [3, 4, 5, 6]


@given(
    st.integers(1, 30),
    st.integers(1, 7),
    st.one_of(
        st.lists(st.integers(0, 29), max_size=12),
        st.tuples(st.integers(0, 29), st.integers(0, 30)).map(lambda t: list(range(t[0], t[1]))),
    ),
)
def test_rows_taken_across_record_batches_are_those_asked_for(
    n: int, per_batch: int, idx: list[int]
) -> None:
    """Rows anywhere, or a run of rows in the file's order (sliced, not taken), across the
    file's record batches: the rows asked for, in that order."""
    idx = [i % n for i in idx]
    table = _snapshot([(i, i) for i in range(n)]).table
    batches = table.to_batches(max_chunksize=per_batch)
    starts = np.cumsum([0, *(b.num_rows for b in batches)], dtype=np.int64)
    got = take_rows(table, batches, starts, np.array(idx, dtype=np.int64), ["key", "record_id"])
    assert got.column_names == ["key", "record_id"]
    assert got.column("key").to_pylist() == [f"k{i}" for i in idx]
    assert got.column("record_id").to_pylist() == idx


def _digests_by_the_letter(
    rows: list[tuple[str | None, ...]], schema: pa.Schema, fp: bytes
) -> tuple[list[list[int]], list[bool]]:
    """The digest format (v2) row by row, as docs/state.md states it: each cell as text (a
    null is U+0000), joined with U+001F, UTF-8, XXH3-128 read as two little-endian 64-bit
    words, XORed with the salt; no digest when a cell holds U+001F or is U+0000 alone."""
    import xxhash

    from recordsync.state.digests import salt

    salt = salt(fp, schema)
    out, ok = [], []
    for row in rows:
        cells = ["\x00" if c is None else str(c) for c in row]
        raw = xxhash.xxh3_128_digest("\x1f".join(cells).encode("utf-8"))
        out.append((np.frombuffer(raw, "<u8") ^ salt).tolist())
        ok.append(not any("\x1f" in c for c in cells) and "\x00" not in map(str, row))
    return out, ok


any_cell = st.one_of(
    st.none(), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
)


@given(
    st.lists(
        st.tuples(any_cell, any_cell, st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
        max_size=30,
    ),
    st.booleans(),
)
def test_digests_are_those_of_the_format(
    rows: list[tuple[str | None, str | None, int | None]], large: bool
) -> None:
    text = pa.large_string() if large else pa.string()
    batch = pa.record_batch(
        {
            "a": pa.array([r[0] for r in rows], text),
            "b": pa.array([r[1] for r in rows], pa.string()),
            "c": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    got = row_digests(batch, ["a", "b", "c"], FP)
    assert got is not None
    want, ok = _digests_by_the_letter(rows, batch.schema, FP)
    assert got[1].tolist() == ok
    assert [d for d, has in zip(got[0].tolist(), ok, strict=True) if has] == [
        d for d, has in zip(want, ok, strict=True) if has
    ]


@pytest.mark.parametrize("scans", [0, 1])
def test_sorting_on_disk_drops_each_batch_s_pages_as_it_goes(
    monkeypatch: pytest.MonkeyPatch, scans: int
) -> None:
    """The snapshot's digests are read from its memory-mapped file a record batch at a
    time while they are sorted to disk, or read for a look-up of a few (``scans`` such
    look-ups before the sort): the pages read are dropped after each batch (a 10M-row
    snapshot's would be 160 MB), not only once the snapshot is loaded."""
    monkeypatch.setattr(tuning_sizes, "DIGEST_SCANS", scans)
    pairs = [(i * 7919 % 1000, i) for i in range(40)]
    batches = _snapshot(pairs).table.to_batches(max_chunksize=6)
    released: list[int] = []
    index = DigestIndex(batches, memory_rows=0, release=lambda: released.append(1))
    assert index.on_disk and not released  # sorted when a row is first looked for
    d = np.array(pairs, dtype=np.uint64)
    assert index.match(d, np.ones(len(pairs), dtype=bool)).tolist() == list(range(40))
    assert not released  # every row found at its place: nothing sorted
    assert index.match(d[:1], np.ones(1, dtype=bool)).tolist() == [0]  # looked up
    assert len(released) == len(batches) == 7
    assert (index._disk is None) == (scans > 0)  # read, not sorted, while scans are left
    assert index.match(d[5:6], np.ones(1, dtype=bool)).tolist() == [5]
    assert index._disk is not None  # the next look-up sorts


def test_taking_a_snapshot_reads_its_batches_one_at_a_time_dropping_their_pages(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The mapped file is read a record batch at a time, the pages each touched dropped
    before the next: never the whole file at once (``read_all`` touched about 2 MB a batch
    of 65,536 rows, all of them held: 300 MB of a 10M-row snapshot's run)."""
    import mmap

    import pyarrow.ipc

    from recordsync.tuning import sizes

    dropped: list[int] = []

    class Mapped(mmap.mmap):
        def madvise(self, option: int, *args: int) -> None:
            if option == mmap.MADV_DONTNEED:
                dropped.append(len(reads))
            super().madvise(option, *args)

    reads: list[int] = []
    real_get = pyarrow.ipc.RecordBatchFileReader.get_batch_with_custom_metadata

    def get_batch(self: Any, i: int) -> Any:
        reads.append(i)
        return real_get(self, i)

    def read_all(self: Any) -> pa.Table:
        raise AssertionError("every batch of the mapped file read at once")

    monkeypatch.setattr(sizes, "SNAPSHOT_FLUSH_ROWS", 2)
    store = StateStore(tmp_path / "state.db")
    try:
        rows = [(f"{c}@x.io", c.upper()) for c in "abcdefg"]
        _write(store, "r1", rows)
        monkeypatch.setattr(mmap, "mmap", Mapped)
        monkeypatch.setattr(
            pyarrow.ipc.RecordBatchFileReader, "get_batch_with_custom_metadata", get_batch
        )
        monkeypatch.setattr(pyarrow.ipc.RecordBatchFileReader, "read_all", read_all)
        snap = take(store, "p", "contacts", FP)
        assert snap is not None and len(snap) == len(rows)
        assert reads == [0, 1, 2, 3]  # 7 rows in batches of 2
        assert all(n in dropped for n in range(1, len(reads) + 1))  # after each batch
        d = digests([r[0] for r in rows], [r[1] for r in rows])
        found = snap.match(d, np.ones(len(rows), dtype=bool))
        assert found.tolist() == list(range(len(rows)))
        assert snap.column("record_id", found) == [100 + i for i in range(len(rows))]
    finally:
        store.close()


@given(
    st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=12),
    st.lists(st.sampled_from(["email:a", "email:b", "email:z", "a", "b", "z"]), max_size=4),
    st.integers(1, 5),
)
def test_keys_hashed_among_some_are_all_keys_hashed_then_kept_if_among_them(
    values: list[str | None], among: list[str], batch: int
) -> None:
    """``hash_batches(which, among)`` gives, per batch, the hashes ``hash_batches(which)``
    gives, of only the keys among ``among``: the same rows, the same hashes."""
    n = len(values)
    table = pa.table(
        {
            "d0": pa.array(range(n), pa.uint64()),
            "d1": pa.array(range(n), pa.uint64()),
            "key": pa.array(values, pa.string()),
            "match_by": pa.array(["email"] * n, pa.string()),
            "match_value": pa.array(values, pa.string()),
            "record_id": pa.array(range(n), pa.int64()),
        }
    )
    snap = Snapshot(pa.Table.from_batches(table.to_batches(max_chunksize=batch)))
    for which in ("key", "match"):
        whole = list(snap.hash_batches(which))
        some = list(snap.hash_batches(which, among))
        assert [s for s, _, _ in some] == [s for s, _, _ in whole]
        for (start, h, has), (_, h2, has2) in zip(whole, some, strict=True):
            keys = [f"email:{v}" if which == "match" else v for v in values[start:]]
            keep = [bool(has[i]) and keys[i] in among for i in range(len(has))]
            assert has2.tolist() == keep
            hashes = dict(zip(np.flatnonzero(has).tolist(), h.tolist(), strict=True))  # row's
            assert h2.tolist() == [hashes[i] for i, k in enumerate(keep) if k]

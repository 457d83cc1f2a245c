"""Source-row digests and snapshots (recordsync.state.digests, recordsync.state.snapshots)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from recordsync.model import UnchangedBlock
from recordsync.state import StateStore
from recordsync.state.digests import fingerprint, row_digests, supported
from recordsync.state.snapshots import Snapshot, SnapshotWriter, take

FP = fingerprint("{}", None, None, None)
COLS = ["a", "b"]


def digests(a: list[str | None], b: list[str | None], fp: bytes = FP) -> np.ndarray:
    got = row_digests(pa.record_batch({"a": a, "b": b}), COLS, fp)
    assert got is not None
    return got[0]


cell = st.one_of(
    st.none(),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x1f\x00")),
)


@given(st.lists(st.tuples(cell, cell), min_size=1, max_size=20))
def test_equal_cells_give_equal_digests_and_any_change_another(rows: list[tuple]) -> None:
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    d = digests(a, b)
    assert (digests(a, b) == d).all()  # stable
    for i, (x, y) in enumerate(rows):
        for j, (x2, y2) in enumerate(rows):
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


def test_a_digest_listed_twice_is_never_matched(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        _write(store, "r1", [("a@x.io", "A"), ("a@x.io", "A"), ("b@x.io", "B")])
        snap = take(store, "p", "contacts", FP)
        assert snap is not None
        found = snap.match(digests(["a@x.io", "b@x.io"], ["A", "B"]), np.ones(2, dtype=bool))
        assert found[0] == -1 and found[1] == 2
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

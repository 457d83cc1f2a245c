"""The snapshot file's compact rows (recordsync.state.snapshot_codec): a row's match rule and
value left out where its key says them, given back exactly, for any rows taken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.state import StateStore
from recordsync.state.digests import SNAPSHOT_SCHEMA
from recordsync.state.snapshot_codec import SNAPSHOT_FILE_SCHEMA, decode, encode, stored_names
from recordsync.state.snapshots import Snapshot, SnapshotWriter, take

TEXT = st.text(st.sampled_from("a:é@ .\x00"), max_size=5)
BY = st.one_of(st.none(), st.sampled_from(["email", "id", "x:y", ""]), TEXT)
ROW = st.tuples(BY, st.one_of(st.none(), TEXT), st.booleans(), TEXT)
"""(match_by, match_value, key made of them, another key)."""


def batch(rows: list[tuple[str | None, str | None, bool, str]]) -> pa.RecordBatch:
    keys = [
        f"{by}:{value}" if in_key and by is not None and value is not None else other
        for by, value, in_key, other in rows
    ]
    n = len(rows)
    return pa.record_batch(
        [
            pa.array(range(n), pa.uint64()),
            pa.array(range(n), pa.uint64()),
            pa.array(keys, pa.string()),
            pa.array([r[0] for r in rows], pa.string()),
            pa.array([r[1] for r in rows], pa.string()),
            pa.array(range(100, 100 + n), pa.int64()),
        ],
        schema=SNAPSHOT_SCHEMA,
    )


@settings(max_examples=200)
@given(st.lists(ROW, max_size=12), st.data())
def test_rows_come_back_exactly_whatever_is_taken(
    rows: list[tuple[str | None, str | None, bool, str]], data: st.DataObject
) -> None:
    logical = batch(rows)
    stored = encode(logical)
    assert stored.schema == SNAPSHOT_FILE_SCHEMA
    table = pa.Table.from_batches([stored])
    assert decode(table).to_pylist() == pa.Table.from_batches([logical]).to_pylist()
    names = data.draw(st.lists(st.sampled_from(SNAPSHOT_SCHEMA.names), unique=True, min_size=1))
    got = decode(table.select(stored_names(names)), names)
    assert got.column_names == names
    assert got.to_pylist() == pa.Table.from_batches([logical]).select(names).to_pylist()


@settings(max_examples=200)
@given(
    st.sampled_from(["email", "name", "", "é", "a:b"]),
    st.lists(st.one_of(st.none(), TEXT), min_size=1, max_size=12),
    st.lists(ROW, max_size=2),
    st.integers(1, 5),
    st.data(),
)
def test_rows_that_all_share_one_rule_come_back_exactly(
    by: str,
    values: list[str | None],
    others: list[tuple[str | None, str | None, bool, str]],
    per_chunk: int,
    data: st.DataObject,
) -> None:
    """Keys that all say one rule and their values (an e-mail-keyed export), some rows
    that do not, in chunks of any size: the rows come back exactly."""
    rows = [(by, v, True, "") for v in values]
    for row in others:
        rows.insert(data.draw(st.integers(0, len(rows))), row)
    logical = batch(rows)
    table = pa.Table.from_batches([encode(logical)]).combine_chunks()
    table = pa.Table.from_batches(table.to_batches(max_chunksize=per_chunk), table.schema)
    want = pa.Table.from_batches([logical])
    assert decode(table).to_pylist() == want.to_pylist()
    names = data.draw(st.lists(st.sampled_from(SNAPSHOT_SCHEMA.names), unique=True, min_size=1))
    got = decode(table.select(stored_names(names)), names)
    assert got.column_names == names
    assert got.to_pylist() == want.select(names).to_pylist()


def test_a_row_whose_key_is_its_rule_and_value_keeps_neither() -> None:
    stored = encode(batch([("email", "a@x.example", True, ""), ("x:y", "v", True, "")]))
    assert stored.column("in_key").to_pylist() == [True, False]  # a rule holding ":": as is
    assert stored.column("match_by").to_pylist() == [None, "x:y"]
    assert stored.column("match_value").to_pylist() == [None, "v"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(ROW, min_size=1, max_size=30))
def test_a_snapshot_file_reads_back_as_written(
    tmp_path_factory: object, rows: list[tuple[str | None, str | None, bool, str]]
) -> None:
    """Through the file (written, registered, taken, memory-mapped): every row and the hashes
    of its match key (``by:value``) as the rows given to the writer say them."""
    root = Path(str(tmp_path_factory.mktemp("codec")))  # type: ignore[attr-defined]
    logical = batch(rows)
    with StateStore(root / "state.db") as store:
        writer = SnapshotWriter(store, "p", "contacts", "r1")
        for r in logical.to_pylist():
            digest = (r["d0"], r["d1"])
            writer.add(digest, r["key"], r["match_by"], r["match_value"], r["record_id"])
        writer.commit(b"fp")
        snap = take(store, "p", "contacts", b"fp")
        assert snap is not None and snap.table.schema == SNAPSHOT_FILE_SCHEMA
        idx = np.arange(len(rows) - 1, -1, -1, dtype=np.int64)
        want = pa.Table.from_batches([logical]).take(pa.array(idx))
        assert snap.take(idx).to_pylist() == want.to_pylist()
        assert snap.column("match_value", idx) == want.column("match_value").to_pylist()
        plain = Snapshot(pa.Table.from_batches([logical]))  # the rows as given, in memory
        for (h1, r1), (h2, r2) in zip(
            (snap.match_key_hashes(), snap.key_hashes()),
            (plain.match_key_hashes(), plain.key_hashes()),
            strict=True,
        ):
            assert h1.tolist() == h2.tolist() and r1.tolist() == r2.tolist()

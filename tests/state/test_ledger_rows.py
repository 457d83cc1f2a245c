"""The ledger's rows written many at a time: the same ledger as one statement a row."""

from __future__ import annotations

import sqlite3
from itertools import count
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.state import StateStore
from recordsync.state.hashing import input_hash
from recordsync.state.ledger_rows import (
    LEDGER_UPSERT,
    STATUS_CODES,
    pack_hash,
    pack_hashes,
    upsert_ledger,
)

HASH_BYTES = len(input_hash({"name": "x"})) // 2
COLUMNS = LEDGER_UPSERT.split(" ON CONFLICT ")[0].count("?")
hex_hashes = st.binary(min_size=HASH_BYTES, max_size=HASH_BYTES).map(bytes.hex)
other_sizes = st.integers(1, 40).filter(lambda n: n != HASH_BYTES)
texts = st.one_of(
    st.none(),
    hex_hashes,
    hex_hashes.map(str.upper),
    st.text(max_size=40),
    st.text(alphabet="0123456789abcdef ", min_size=2 * HASH_BYTES, max_size=2 * HASH_BYTES),
    other_sizes.flatmap(lambda n: st.binary(min_size=n, max_size=n)).map(bytes.hex),
)


@given(st.lists(texts, max_size=30), st.lists(hex_hashes, max_size=30))
def test_hashes_packed_at_once_are_packed_one_by_one(
    odd: list[str | None], hashes: list[str]
) -> None:
    assert pack_hashes(hashes) == list(map(pack_hash, hashes))
    mixed = hashes + odd
    assert pack_hashes(mixed) == list(map(pack_hash, mixed))


def _ledger(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT * FROM ledger ORDER BY scope_id, source_key").fetchall()


_files = count()
row = st.tuples(
    st.sampled_from(["k1", "k2", "k3", "k4"]) | st.text(min_size=1, max_size=3),
    st.none() | st.integers(1, 50),
    st.none() | hex_hashes.map(pack_hash),
    st.sampled_from(sorted(STATUS_CODES.values())),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(st.lists(row, max_size=50), st.lists(row, min_size=150, max_size=260))
def test_a_multi_row_upsert_leaves_the_ledger_one_row_a_statement_leaves(
    tmp_path: Path, before: list[tuple[object, ...]], rows: list[tuple[object, ...]]
) -> None:
    """Keys given twice (in one statement too) end with their last row, by the same rules;
    more rows than one statement holds (the rest one a statement)."""
    got = []
    for many in (True, False):
        with StateStore(tmp_path / f"s{next(_files)}.db") as store:
            scope = store.scope_id("p", "m")
            assert scope is not None
            stored = [(scope, k, rid, h, code, 1, 7)[:COLUMNS] for k, rid, h, code in before]
            new = [(scope, k, rid, h, code, 2, 9)[:COLUMNS] for k, rid, h, code in rows]
            with store.transaction() as conn:
                conn.executemany(LEDGER_UPSERT, stored)
                upsert_ledger(conn, new, many=many)
            got.append(_ledger(store.connection))
    assert got[0] == got[1]

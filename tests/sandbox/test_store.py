"""Storage: dedup and match look-ups use indexes (never a scan), bulk insert, transactions."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.sandbox.store import KEY_COLUMNS, Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "s.db")


@pytest.mark.parametrize("column", [*KEY_COLUMNS, "name"])
def test_lookups_use_an_index(store: Store, column: str) -> None:
    plan = store.db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM records WHERE object_type_id = ? AND "
        f"{column} = ? AND deleted_at IS NULL ORDER BY id LIMIT 1",
        (1, "x"),
    ).fetchall()
    detail = " ".join(str(row[-1]) for row in plan)
    assert "USING INDEX" in detail or "USING COVERING INDEX" in detail, detail
    assert "SCAN records" not in detail


def test_find_by_key_goes_through_the_same_query(store: Store) -> None:
    traced: list[str] = []
    store.db.set_trace_callback(traced.append)
    store.find_by_key(1, "email_norm", "a@x.example")
    sql = traced[-1]
    plan = store.db.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
    assert "records_live_email" in " ".join(str(r[-1]) for r in plan)


def test_bulk_insert_and_lookup(store: Store) -> None:
    rows = (
        (f"C{i}", {"email": f"c{i}@x.example"}, (f"c{i}@x.example", None, None, None))
        for i in range(1000)
    )
    assert store.bulk_insert(1, rows, "2026-01-01T00:00:00.000Z") == 1000
    found = store.find_by_key(1, "email_norm", "c500@x.example")
    assert found is not None and found.name == "C500"
    assert store.find_by_key(2, "email_norm", "c500@x.example") is None


def test_transaction_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.insert(1, "A", None, {}, (None, None, None, None), "2026-01-01T00:00:00.000Z")
        raise RuntimeError("boom")
    assert store.db.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 0


def test_find_by_key_rejects_other_columns(store: Store) -> None:
    with pytest.raises(ValueError):
        store.find_by_key(1, "data", "x")


def _plan(store: Store, sql: str) -> str:
    rows = store.db.execute("EXPLAIN QUERY PLAN " + sql).fetchall()  # traced: values bound
    return " ".join(str(row[-1]) for row in rows)


def test_a_page_of_the_newest_edits_is_read_through_an_index(store: Store) -> None:
    # what a nightly run asks before each step (sort_by=updated_at desc) and at its end: the
    # page must come from an index in order, not from sorting every record of the type
    traced: list[str] = []
    store.db.set_trace_callback(traced.append)
    store.select(
        "object_type_id = ? AND deleted_at IS NULL", [1], "updated_at DESC, id ASC", 200, 0
    )
    page = next(sql for sql in traced if "ORDER BY" in sql)
    count = next(sql for sql in traced if "COUNT(*)" in sql)
    detail = _plan(store, page)
    assert "records_live_updated" in detail, detail
    assert "TEMP B-TREE FOR ORDER BY" not in detail, detail  # "RIGHT PART": the ties only
    assert "COVERING INDEX" in _plan(store, count)


def test_an_older_sandbox_loses_the_index_the_new_ones_replace(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    Store(path).close()
    old = Store(path)
    old.db.execute("CREATE INDEX records_type_id ON records (object_type_id)")
    old.close()
    names = {
        r[0] for r in Store(path).db.execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert "records_type_id" not in names
    assert {"records_type_live", "records_live_updated"} <= names

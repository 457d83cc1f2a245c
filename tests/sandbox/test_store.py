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

"""The target check's use of the ledger: what it asks, never the whole ledger in memory.

The pages come from a stand-in for the list endpoint (the end-to-end behaviour against the
sandbox is in tests/e2e/test_targets_e2e.py); the ledger is a real state store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recordsync.nightly import target_check
from recordsync.nightly.target_check import Mark, check
from recordsync.state.store import StateStore

MARK = "2026-11-01T00:00:00.000Z"
LATER = "2026-11-02T00:00:00.000Z"


class Pages:
    """The list endpoint over ``records`` (newest edit first, or by id)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def list_page(
        self, object_type: str, *, limit: int, offset: int, **params: Any
    ) -> tuple[list[dict[str, Any]], int | None]:
        if params.get("sort_by") == "updated_at":
            ordered = sorted(self.records, key=lambda r: r["updated_at"], reverse=True)
        else:
            ordered = sorted(self.records, key=lambda r: r["id"])
        return ordered[offset : offset + limit], len(self.records)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The state store's location: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return tmp_path / "state.db"


@pytest.fixture
def opened() -> Iterator[list[StateStore]]:
    stores: list[StateStore] = []
    yield stores
    for store in stores:
        store.close()


def _store(where: Any, ids: range, opened: list[StateStore]) -> tuple[StateStore, int]:
    store = StateStore(where)
    opened.append(store)
    rows = [(f"k{i}", i, "0" * 32, "created") for i in ids]
    store.record_acknowledged("p", "contacts", "run-1", rows)
    scope = store.scope_id("p", "contacts", create=False)
    assert scope is not None
    return store, scope


def _record(rid: int, updated: str = MARK, created: str = MARK) -> dict[str, Any]:
    return {"id": rid, "name": f"r{rid}", "updated_at": updated, "created_at": created}


def test_nothing_edited_asks_the_ledger_nothing(
    tmp_path: Path, opened: list[StateStore]
) -> None:
    store, scope = _store(tmp_path / "state.db", range(1, 301), opened)
    traced: list[str] = []
    store.connection.set_trace_callback(traced.append)
    finding = check(
        Pages([_record(i) for i in range(1, 301)]),
        store.connection,
        scope,
        "contacts",
        Mark(MARK, 300),
    )
    assert not finding.found and finding.requests == 1
    assert not [sql for sql in traced if "ledger" in sql]


@pytest.mark.parametrize("lookup_ids", [2_000, 3])  # by id, and picked out of one pass
def test_edited_created_and_vanished_records_are_told_apart(
    where: Any, opened: list[StateStore], monkeypatch: pytest.MonkeyPatch, lookup_ids: int
) -> None:
    monkeypatch.setattr(target_check, "LOOKUP_IDS", lookup_ids)
    store, scope = _store(where, range(1, 601), opened)  # more than one IN statement of 500
    edited = (5, 501, 502, 599)
    records = [  # 7 and 550 deleted
        _record(i, LATER if i in edited else MARK) for i in range(1, 601) if i not in (7, 550)
    ]
    records += [_record(900, LATER, LATER), _record(901, LATER, LATER)]  # not in the ledger
    finding = check(Pages(records), store.connection, scope, "contacts", Mark(MARK, 600))
    assert finding.edited == [5, 501, 502, 599]
    assert sorted(r["id"] for r in finding.unknown) == [900, 901]
    assert finding.vanished == [7, 550]


def test_a_deleted_ledger_entry_is_not_a_live_record(
    where: Any, opened: list[StateStore]
) -> None:
    store, scope = _store(where, range(1, 4), opened)
    with store.transaction() as tx:
        target_check.apply(tx, scope, target_check.Finding("contacts", vanished=[2]))
    records = [_record(1, LATER), _record(2, LATER, LATER)]  # 2: a new record, same id
    finding = check(Pages(records), store.connection, scope, "contacts", Mark(MARK, 3))
    assert finding.edited == [1]
    assert [r["id"] for r in finding.unknown] == [2]
    assert finding.vanished == [3]

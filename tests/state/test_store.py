"""The ledger: created on demand, versioned, bulk lookups, acknowledged-only updates."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.errors import ConfigError
from recordsync.state import StateStore
from recordsync.state.ledger_rows import DELETED, STATUS_CODES
from recordsync.state.schema import SCHEMA_VERSION


def test_created_on_demand_with_wal_and_version(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "state.db"
    with StateStore(path) as store:
        mode = store.connection.execute("PRAGMA journal_mode").fetchone()[0]
    assert path.exists()
    assert mode == "wal"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(ConfigError) as info:
        StateStore(path)
    assert str(path) in str(info.value)
    assert "upgrade recordsync" in str(info.value)


def test_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="cannot open the state database"):
        StateStore(path)


def test_default_path_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECORDSYNC_STATE_DB", str(tmp_path / "x.db"))
    with StateStore() as store:
        assert store.path == tmp_path / "x.db"


def test_acknowledged_rows_round_trip(store: StateStore) -> None:
    store.record_acknowledged(
        "p", "contacts", "run1", [("a@x", 11, "h1", "created"), ("b@x", 12, "h2", "updated")]
    )
    found = store.lookup_many("p", "contacts", ["a@x", "b@x", "zzz"])
    assert set(found) == {"a@x", "b@x"}
    a = found["a@x"]
    assert (a.record_id, a.input_hash, a.last_status, a.last_run_id) == (
        11,
        "h1",
        "created",
        "run1",
    )
    assert a.updated_at.endswith("Z")


def test_failed_keeps_identity_and_hash(store: StateStore) -> None:
    store.record_acknowledged("p", "m", "r1", [("k", 5, "h1", "created")])
    store.record_acknowledged("p", "m", "r2", [("k", None, "h2", "failed")])
    entry = store.get("p", "m", "k")
    assert entry is not None
    assert (entry.record_id, entry.input_hash, entry.last_status, entry.last_run_id) == (
        5,
        "h1",
        "failed",
        "r2",
    )


def test_failed_first_time_has_no_id(store: StateStore) -> None:
    store.record_acknowledged("p", "m", "r1", [("k", None, "h1", "failed")])
    entry = store.get("p", "m", "k")
    assert entry is not None
    assert (entry.record_id, entry.input_hash, entry.last_status) == (None, None, "failed")


def test_missing_record_id_keeps_the_known_one(store: StateStore) -> None:
    store.record_acknowledged("p", "m", "r1", [("k", 5, "h1", "created")])
    store.record_acknowledged("p", "m", "r2", [("k", None, "h2", "updated")])
    entry = store.get("p", "m", "k")
    assert entry is not None and (entry.record_id, entry.input_hash) == (5, "h2")


def test_unsent_statuses_and_keyless_rows_do_not_change_the_ledger(store: StateStore) -> None:
    store.record_acknowledged("p", "m", "r1", [("k", 5, "h1", "created")])
    written = store.record_acknowledged(
        "p",
        "m",
        "r2",
        [("k", 9, "h9", "unchanged"), ("j", 1, "h", "invalid"), (None, 3, "h", "created")],
    )
    assert written == 0
    entry = store.get("p", "m", "k")
    assert entry is not None and (entry.record_id, entry.last_run_id) == (5, "r1")
    assert store.get("p", "m", "j") is None


def test_scopes_are_separate(store: StateStore) -> None:
    store.record_acknowledged("p", "contacts", "r", [("k", 1, "h", "created")])
    store.record_acknowledged("q", "contacts", "r", [("k", 2, "h", "created")])
    store.record_acknowledged("p", "companies", "r", [("k", 3, "h", "created")])
    assert store.lookup_many("p", "contacts", ["k"])["k"].record_id == 1
    assert store.lookup_many("q", "contacts", ["k"])["k"].record_id == 2
    assert store.lookup_many("p", "companies", ["k"])["k"].record_id == 3
    assert store.lookup_many("p", "deals", ["k"]) == {}


@pytest.mark.parametrize("json_each", [True, False], ids=["json_each", "in_list"])
def test_lookup_many_beyond_one_query(store: StateStore, json_each: bool) -> None:
    store._json_each = json_each  # the IN (?, ?, ...) form serves SQLite without JSON
    n = 2345  # more than LOOKUP_CHUNK keys: several queries
    store.record_acknowledged("p", "m", "r", ((f"k{i}", i, f"h{i}", "created") for i in range(n)))
    found = store.lookup_many("p", "m", (f"k{i}" for i in range(0, 2 * n, 2)))
    assert len(found) == len(range(0, n, 2))
    assert all(found[f"k{i}"].record_id == i for i in range(0, n, 2))
    odd = ['k"1', "k\\2", "ké\u2028", "", " k ", "1"]  # keys that JSON must escape
    store.record_acknowledged("p", "m", "r", [(k, 1, "h", "created") for k in odd])
    assert sorted(store.lookup_many("p", "m", [*odd, 'K"1'])) == sorted(odd)


def test_transaction_rolls_back_on_error(store: StateStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.record_acknowledged("p", "m", "r", [("k", 1, "h", "created")])
        raise RuntimeError("boom")
    assert store.get("p", "m", "k") is None


def test_keys_stream_and_counts(store: StateStore) -> None:
    store.record_acknowledged(
        "p",
        "m",
        "r",
        [("b", 1, "h", "created"), ("a", 2, "h", "updated"), ("c", None, None, "failed")],
    )
    assert list(store.keys("p", "m")) == ["a", "b", "c"]
    assert store.counts("p") == {"m": {"created": 1, "updated": 1, "failed": 1}}
    assert store.pipelines() == ["p"]


def test_forget_one_mapping_or_all(store: StateStore) -> None:
    store.record_acknowledged("p", "a", "r", [("k1", 1, "h", "created"), ("k2", 2, "h", "created")])
    store.record_acknowledged("p", "b", "r", [("k", 3, "h", "created")])
    store.record_acknowledged("q", "a", "r", [("k", 4, "h", "created")])
    assert store.forget("p", "a") == 2
    assert store.mappings("p") == ["b"]
    assert store.forget("p") == 1
    assert store.mappings("p") == []
    assert store.get("q", "a", "k") is not None
    # the scope can be used again after forgetting
    store.record_acknowledged("p", "a", "r2", [("k1", 7, "h", "created")])
    assert store.get("p", "a", "k1") is not None


def test_reopen_sees_committed_data(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with StateStore(path) as s:
        s.record_acknowledged("p", "m", "r", [("k", 1, "h", "created")])
    with StateStore(path) as s:
        assert s.get("p", "m", "k") is not None


@settings(max_examples=50, deadline=None)
@given(
    stored=st.sets(st.text(st.characters(codec="utf-8"), max_size=12), max_size=30),
    asked=st.lists(st.text(st.characters(codec="utf-8"), max_size=12), max_size=30),
)
def test_lookup_finds_exactly_the_stored_keys(stored: set[str], asked: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, StateStore(Path(tmp) / "s.db", durable=False) as s:
        s.record_acknowledged("p", "m", "r", [(k, 1, "h", "created") for k in stored])
        wanted = [*asked, *list(stored)[:5]]
        assert set(s.lookup_many("p", "m", wanted)) == set(wanted) & stored


def test_owned_keys_are_the_live_entries_with_a_record(store: StateStore) -> None:
    """owned_keys gives what the entries of lookup_many say: a record id, not deleted."""
    store.record_acknowledged(
        "p",
        "m",
        "r",
        [("a", 1, "h", "created"), ("b", None, "h", "failed"), ("c", 3, "h", "updated")],
    )
    store.record_acknowledged("p", "m", "r2", [("c", None, "h", "in_doubt")])
    store.record_acknowledged("p", "m", "r", [("d", 4, "h", "created")])
    scope = store.scope_id("p", "m", create=False)
    with store.transaction() as conn:
        conn.execute(
            "UPDATE ledger SET last_status = ? WHERE scope_id = ? AND source_key = 'd'",
            (STATUS_CODES[DELETED], scope),
        )
    asked = ["a", "b", "c", "d", "e"]
    found = store.lookup_many("p", "m", asked)
    want = {k for k, e in found.items() if e.record_id is not None and e.last_status != DELETED}
    assert want == {"a", "c"}
    assert store.owned_keys("p", "m", asked) == want
    assert store.owned_keys("p", "other", asked) == set()

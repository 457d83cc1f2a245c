"""A dry run's ledger (:class:`RunLedger`): planned rows over the state store's ledger."""

from __future__ import annotations

import pytest

from recordsync.core.errors import RowError
from recordsync.nightly.refs import PLANNED, ReferenceResolver, RunLedger
from recordsync.state import StateStore


@pytest.fixture
def ledger(store: StateStore) -> RunLedger:
    store.record_acknowledged(
        "nightly",
        "companies",
        "r1",
        [("acme.com", 10, "h", "created"), ("globex.com", None, None, "failed")],
    )
    return RunLedger(store)


def test_the_store_id_wins_and_planned_rows_resolve_to_no_id_yet(ledger: RunLedger) -> None:
    ledger.plan("companies", ["acme.com", "globex.com", "newco.example"])
    r = ReferenceResolver(ledger, "nightly", "companies")
    assert r.resolve("acme.com") == 10  # the real run finds it in the ledger
    assert r.resolve("globex.com") is None  # failed last time, sent (created) this time
    assert r.resolve("newco.example") is None
    found = ledger.lookup_many("nightly", "companies", ["acme.com", "newco.example", "x"])
    assert found["newco.example"].last_status == PLANNED and "x" not in found


def test_an_unplanned_key_fails_with_the_real_runs_message(ledger: RunLedger) -> None:
    ledger.plan("deals", ["globex.com"])  # another step's plan is not this mapping's
    r = ReferenceResolver(ledger, "nightly", "companies", column="company_id")
    with pytest.raises(RowError) as err:
        r.resolve("globex.com")
    assert err.value.message == (
        "company_id: no 'companies' record with key 'globex.com' in the ledger of pipeline"
        " 'nightly' (its last send was failed)"
    )
    with pytest.raises(RowError, match="that key was never synced"):
        r.resolve("nowhere.example")


def test_without_a_store_only_planned_rows_resolve() -> None:
    ledger = RunLedger()
    ledger.plan("companies", ["acme.com"])
    r = ReferenceResolver(ledger, "nightly", "companies", on_missing="unset")
    assert r.resolve("acme.com") is None and r.resolve("other.example") is None
    strict = ReferenceResolver(ledger, "nightly", "companies")
    assert strict.resolve("acme.com") is None
    with pytest.raises(RowError):
        strict.resolve("other.example")

"""``lookup: service``: exact comparison of the list endpoint's substring hits, one request
per value and run, bounded in values and pages. The sandbox cannot cheaply hold a thousand
substring hits or fail one list request, so these edge cases use a fake fetch; the normal
path runs against the sandbox in tests/e2e/test_refs_by_e2e.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.nightly.test_ref_index import companies

from recordsync.config.models import RefSpec
from recordsync.core.errors import AuthError, RetriableApiError, RowError
from recordsync.nightly.ref_index import MATCHERS, RefIndex
from recordsync.nightly.ref_lookup import PAGE_SIZE, ServiceLookup
from recordsync.nightly.refs import ReferenceResolver
from recordsync.state import StateStore


class FakeService:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        self.calls: list[dict[str, Any]] = []
        self.fail: Exception | None = None

    def __call__(self, object_type: str, **params: Any) -> Iterator[dict[str, Any]]:
        self.calls.append({"object_type": object_type, **params})
        if self.fail is not None:
            raise self.fail
        probe = params["filter[name]"].lower()
        yield from (r for r in self.records if probe in str(r["name"]).lower())


def lookup(service: FakeService, **bounds: int) -> ServiceLookup:
    return ServiceLookup(service, "companies", "name", MATCHERS["fold"], **bounds)


def test_substring_hits_are_compared_exactly_and_each_value_is_asked_once() -> None:
    service = FakeService(
        [{"id": 1, "name": "Acme"}, {"id": 2, "name": "Acme Holdings"}, {"id": 3, "name": "ACME"}]
    )
    look = lookup(service)
    assert look.find("Acme", "acme").ids == (1, 3)
    assert look.find("ACME", "acme").ids == (1, 3)
    assert look.find("Acme Holdings", "acme holdings").ids == (2,)
    assert service.calls == [
        {"object_type": "companies", "page_size": PAGE_SIZE, "filter[name]": "Acme"},
        {"object_type": "companies", "page_size": PAGE_SIZE, "filter[name]": "Acme Holdings"},
    ]


def test_too_many_substring_hits_are_not_decided() -> None:
    records = [{"id": i, "name": f"Acme {i}"} for i in range(PAGE_SIZE + 1)]
    look = lookup(FakeService([*records, {"id": 9999, "name": "acme"}]), max_pages=1)
    found = look.find("acme", "acme")
    assert found.ids == () and found.problem is not None
    assert f"more than {PAGE_SIZE} records whose name contains it: not decided" in found.problem


def test_the_number_of_values_looked_up_is_bounded() -> None:
    service = FakeService([{"id": 1, "name": "A"}])
    look = lookup(service, max_values=2)
    assert look.find("a", "a").ids == (1,)
    assert look.find("b", "b").ids == ()
    third = look.find("c", "c")
    assert third.problem is not None and "2 values of this field" in third.problem
    assert look.find("a", "a").ids == (1,)  # cached: still answered
    assert len(service.calls) == 2


def test_a_failed_request_fails_the_value_and_an_auth_failure_stops_the_run() -> None:
    service = FakeService([])
    service.fail = RetriableApiError("timed out", method="GET", path="/api/objects/companies")
    look = lookup(service)
    found = look.find("a", "a")
    assert found.problem is not None and found.problem.startswith("the service lookup failed:")
    assert look.find("a", "a") == found and len(service.calls) == 1
    service.fail = AuthError("invalid API key", status=401)
    with pytest.raises(AuthError):
        lookup(service).find("a", "a")


def test_the_resolver_asks_the_service_only_for_values_the_run_does_not_have(
    tmp_path: Path, store: StateStore
) -> None:
    store.record_acknowledged(
        "nightly",
        "companies",
        "r1",
        [("acme.com", 10, "h", "created"), ("globex.io", None, None, "failed")],
    )
    target = companies(tmp_path, [["Acme", "acme.com"], ["Globex", "globex.io"]])
    spec = RefSpec.model_validate(
        {"mapping": "companies", "by": "name", "lookup": "service", "on_missing": "unset"}
    )
    service = FakeService([{"id": 77, "name": "Globex"}, {"id": 78, "name": "Down"}])
    r = ReferenceResolver(
        store,
        "nightly",
        "companies",
        on_missing="unset",
        column="company_id",
        index=RefIndex(spec, target, tmp_path),
        service=lookup(service),
    )
    assert r.resolve("acme") == 10  # this run's row: the service is not asked
    assert r.resolve("globex") == 77  # its row's send failed: the service has one
    assert r.resolve("nobody") is None  # on_missing: unset
    service.fail = RetriableApiError("timed out")
    with pytest.raises(RowError, match=r"'Down' fits no row .*; and the service lookup failed"):
        r.resolve("Down")  # a failed lookup fails the row whatever on_missing says
    assert [c["filter[name]"] for c in service.calls] == ["globex", "nobody", "Down"]
    assert dict(r.counts) == dict(set=2, no_value=0, not_found=2, ambiguous=0, from_service=1)

"""Cross-object references through another mapping's ledger."""

from __future__ import annotations

from unittest.mock import patch

import pytest

from recordsync.core.errors import RowError
from recordsync.nightly.refs import ReferenceResolver
from recordsync.state import StateStore
from recordsync.state.ledger_rows import status_sql


def domain_key(value: str) -> str | None:
    """Stands in for the companies mapping's key function (lower case, no scheme/www/path)."""
    host = value.lower().split("://", 1)[-1].removeprefix("www.")
    return host.split("/", 1)[0] or None


@pytest.fixture
def companies(store: StateStore) -> StateStore:
    store.record_acknowledged(
        "nightly",
        "companies",
        "r1",
        [
            ("acme.com", 10, "h", "created"),
            ("globex.com", None, None, "failed"),
            ("initech.com", 12, "h", "updated"),
        ],
    )
    store.connection.execute(
        f"UPDATE ledger SET last_status = {status_sql('deleted')} WHERE source_key = 'initech.com'"
    )
    return store


def test_resolves_normalised_key(companies: StateStore) -> None:
    r = ReferenceResolver(companies, "nightly", "companies", normalize=domain_key)
    assert r.resolve("https://www.ACME.com/about") == 10
    assert r.resolve("acme.com") == 10
    assert r.resolve(None) is None
    assert r.resolve("   ") is None


def test_missing_reference_fails_naming_mapping_and_key(companies: StateStore) -> None:
    r = ReferenceResolver(
        companies, "nightly", "companies", normalize=domain_key, column="company_id"
    )
    with pytest.raises(RowError) as info:
        r.resolve("www.unknown.example")
    err = info.value
    assert (err.column, err.value, err.rule) == ("company_id", "www.unknown.example", "reference")
    assert "'companies'" in str(err) and "'unknown.example'" in str(err)
    assert "never synced" in str(err) and "on_missing: unset" in str(err)
    with pytest.raises(RowError, match="last send was failed"):
        r.resolve("globex.com")
    with pytest.raises(RowError, match="deleted by mirror deletes"):
        r.resolve("initech.com")


def test_unset_policy_leaves_the_field_empty(companies: StateStore) -> None:
    r = ReferenceResolver(companies, "nightly", "companies", on_missing="unset")
    assert r.resolve("unknown.example") is None
    assert r.resolve("acme.com") == 10


def test_bad_policy_is_rejected(store: StateStore) -> None:
    with pytest.raises(ValueError, match="on_missing"):
        ReferenceResolver(store, "p", "m", on_missing="skip")  # type: ignore[arg-type]


def test_cache_and_prefetch_use_bulk_lookups(companies: StateStore) -> None:
    r = ReferenceResolver(companies, "nightly", "companies", on_missing="unset")
    with patch.object(companies, "lookup_many", wraps=companies.lookup_many) as spy:
        r.prefetch(["acme.com", "nope.com", None, "acme.com"])
        assert spy.call_count == 1
        assert r.resolve("acme.com") == 10
        assert r.resolve("nope.com") is None
        r.prefetch(["acme.com"])
        assert spy.call_count == 1  # everything cached


def test_another_pipeline_is_not_consulted(companies: StateStore) -> None:
    r = ReferenceResolver(companies, "other", "companies")
    with pytest.raises(RowError, match="pipeline 'other'"):
        r.resolve("acme.com")

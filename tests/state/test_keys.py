"""Ledger keys and reference keys (recordsync.state.keys) and the per-step ledger work
(recordsync.nightly.ledger_prep): declared keys, duplicate keys, references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from recordsync.config.models import MappingConfig
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.nightly.ledger_prep import StepPrep
from recordsync.state import StateStore
from recordsync.state.keys import (
    cell_text,
    domain_key,
    ledger_key_of,
    ledger_keys_of,
    reference_normalizer,
)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("acme.com", "acme.com"),
        ("https://www.Acme.com/", "acme.com"),
        ("http://acme.com:8080/about?x=1#top", "acme.com"),
        ("WWW.ACME.COM.", "acme.com"),
        ("sales@Acme.com", "acme.com"),
        ("  ", None),
        ("https://", None),
    ],
)
def test_domain_key(text: str, key: str | None) -> None:
    assert domain_key(text) == key


@given(st.from_regex(r"[a-z0-9-]{1,20}\.[a-z]{2,6}", fullmatch=True))
def test_every_spelling_of_a_domain_is_one_key(domain: str) -> None:
    assume(domain.split(".")[0] != "www")  # a leading "www." is dropped: WWW.ACME.COM above
    for spelling in (domain, f"https://www.{domain}/", f"HTTP://{domain.upper()}/x", f"a@{domain}"):
        assert domain_key(spelling) == domain


def test_cell_text() -> None:
    assert [cell_text(v) for v in (None, "", "  7 ", 7, 7.0, 7.5, float("nan"))] == [
        None,
        None,
        "7",
        "7",
        "7",
        "7.5",
        None,
    ]


def mapping(**extra: Any) -> MappingConfig:
    data: dict[str, Any] = {
        "object_type": "contacts",
        "source": {"path": "x.csv"},
        "name": "Name",
        "match_by": ["email"],
        "fields": {"email": "Email"},
        **extra,
    }
    return MappingConfig.model_validate(data)


def test_ledger_key_and_reference_normalisers() -> None:
    keyed = mapping(ledger_key={"column": "Site", "normalize": "domain"})
    assert ledger_key_of(keyed, {"Site": "https://www.Acme.com"}) == "acme.com"
    assert ledger_key_of(keyed, {"Site": ""}) is None
    assert reference_normalizer(keyed)("www.acme.com") == "acme.com"
    by_email = mapping()
    assert reference_normalizer(by_email)("Ann@X.io") == "email:ann@x.io"
    by_name = mapping(match_by=["name"])
    assert reference_normalizer(by_name)("Acme Ltd") == "name:Acme Ltd"


def row(n: int, values: dict[str, Any], key: str | None = None) -> PreparedRow:
    return PreparedRow(
        SourceRow("x.csv", n, values),
        RowStatus.VALID,
        {"name": values.get("Name", "x"), "fields": {}},
        key=key,
    )


def test_declared_keys_replace_match_keys_and_repeats_are_duplicates(tmp_path: Path) -> None:
    cfg = mapping(ledger_key="Contact ID")
    with StateStore(tmp_path / "s.db") as store:
        prep = StepPrep(store, "p", "people", cfg, {"people": cfg})
        rows = [
            row(2, {"Contact ID": 17}, "email:a@x.io"),
            row(3, {"Contact ID": ""}, "email:b@x.io"),
            row(4, {"Contact ID": 17.0}, "email:c@x.io"),
        ]
        prep.apply(rows)
    assert [r.key for r in rows] == ["17", "email:b@x.io", "17"]
    assert [r.status for r in rows] == [RowStatus.VALID, RowStatus.VALID, RowStatus.DUPLICATE]
    assert rows[2].error is not None and "row 2 has the same key" in rows[2].error


def test_references_resolve_fail_or_unset(tmp_path: Path) -> None:
    companies = mapping(
        object_type="companies",
        match_by=["name"],
        fields={},
        ledger_key={"column": "Site", "normalize": "domain"},
    )
    with StateStore(tmp_path / "s.db") as store:
        store.record_acknowledged("p", "companies", "r0", [("acme.com", 41, "h", "created")])
        for on_missing in ("fail", "unset"):
            deals = mapping(
                object_type="deals",
                match_by=["name"],
                fields={
                    "company_id": {
                        "column": "Domain",
                        "ref": {"mapping": "companies", "on_missing": on_missing},
                    }
                },
            )
            prep = StepPrep(store, "p", "deals", deals, {"companies": companies, "deals": deals})
            rows = [row(2, {"Domain": "https://acme.com/"}), row(3, {"Domain": "nope.io"})]
            prep.apply(rows)
            assert rows[0].payload == {"name": "x", "fields": {"company_id": 41}}
            if on_missing == "fail":
                assert rows[1].status is RowStatus.INVALID
                assert rows[1].error is not None and "'companies'" in rows[1].error
                assert "'nope.io'" in rows[1].error
            else:
                assert rows[1].status is RowStatus.VALID
                assert rows[1].payload == {"name": "x", "fields": {}}


@pytest.mark.parametrize(("durable", "level"), [(False, 1), (True, 2)])
def test_runs_commit_without_fsync_unless_durable(
    tmp_path: Path, durable: bool, level: int
) -> None:
    from recordsync.nightly.opening import open_state

    with open_state("p", tmp_path / "s.db", "r1", durable=durable) as hook:
        sync = hook.store.connection.execute("PRAGMA synchronous").fetchone()[0]
        mode = hook.store.connection.execute("PRAGMA journal_mode").fetchone()[0]
        hook.finish("finished")
    assert (sync, mode) == (level, "wal")  # NORMAL in WAL: a commit survives kill -9


CELLS = st.one_of(
    st.none(),
    st.text(st.sampled_from(" \tAaBb.@/:x1"), max_size=8),
    st.integers(-3, 3),
    st.floats(allow_infinity=False),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(CELLS, max_size=12),
    normalize=st.sampled_from(["none", "lower", "email", "domain"]),
)
def test_ledger_keys_of_cells_are_each_rows_ledger_key(cells: list[Any], normalize: str) -> None:
    """ledger_keys_of (a column's cells at once, the text ones without cell_text's call) gives
    ledger_key_of of each row."""
    keyed = mapping(ledger_key={"column": "K", "normalize": normalize})
    assert ledger_keys_of(keyed, cells) == [ledger_key_of(keyed, {"K": c}) for c in cells]

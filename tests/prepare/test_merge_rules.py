"""Merge prediction (recordsync.prepare.merge_rules): the contract's dedup normalisations and the
simulation of the service's dedup over one source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.map.engine import BatchMapper
from recordsync.prepare import merges as prepare_merges
from recordsync.prepare.dups import Duplicates
from recordsync.prepare.merge_rules import (
    LEGAL_SUFFIXES,
    creates,
    dedup_keys,
    domain_key,
    email_key,
    kind_of,
    linkedin_key,
    name_key,
    predict,
)
from recordsync.prepare.merges import scan_merges
from recordsync.tuning import sizes


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Davenport LLC", "davenport"),
        ("Davenport PLC", "davenport"),
        ("  DAVENPORT,   Inc. ", "davenport"),
        ("Acme Corporation", "acme"),
        ("S.A.", "sa"),  # only a suffix: compared as is
        ("Acme Co Ltd", "acme co"),  # one suffix only
        ("Café «Zürich» GmbH", "café zürich"),
        ("!!!", None),
        ("", None),
    ],
)
def test_name_key_follows_the_contract(raw: str, key: str | None) -> None:
    assert name_key(raw) == key


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("https://www.Acme.com/about?x=1", "acme.com"),
        ("acme.com", "acme.com"),
        ("http://user:pw@acme.com:8080/", "acme.com"),
        ("WWW.ACME.COM.", "acme.com"),
        ("", None),
    ],
)
def test_domain_key_follows_the_contract(raw: str, key: str | None) -> None:
    assert domain_key(raw) == key


def test_linkedin_and_email_keys() -> None:
    a = linkedin_key("https://www.LinkedIn.com/company/acme/?trk=x")
    assert a == linkedin_key("linkedin.com/company/acme") == "linkedin.com/company/acme"
    assert email_key("  Ann@X.io ") == "ann@x.io"
    assert email_key(None) is None


_word = st.text(alphabet="abcdefgxyz", min_size=1, max_size=6)


@given(st.lists(_word, min_size=1, max_size=3), st.sampled_from(sorted(LEGAL_SUFFIXES)))
def test_a_name_and_the_name_with_a_legal_suffix_share_a_key(words: list[str], suffix: str) -> None:
    name = " ".join(words)
    if name_key(name) != name:  # the name ends in a suffix itself: one only is removed
        return
    assert name_key(f"{name.upper()} {suffix.title()}.") == name_key(name)


@given(st.text(alphabet="abcxyz.-", min_size=1, max_size=12), st.sampled_from(["", "/p?q"]))
def test_a_domain_written_with_scheme_www_and_path_has_the_bare_key(host: str, tail: str) -> None:
    bare = domain_key(host)
    if bare is None or bare.startswith("www."):
        return
    assert domain_key(f"https://www.{host.upper()}{tail}") == bare


@given(st.text(max_size=20))
def test_normalisations_are_idempotent(text: str) -> None:
    for norm in (name_key, email_key):
        key = norm(text)
        assert key is None or norm(key) == key


def test_dedup_keys_in_rule_order_and_who_creates() -> None:
    payload = {
        "name": "Davenport LLC",
        "fields": {"domain": "https://d1.example/", "linkedin_url": None},
        "match_by": "name",
        "match_value": "Davenport LLC",
    }
    assert dedup_keys("companies", payload) == ["d1.example", None, "davenport"]
    contact = {"name": "Ann", "fields": {}, "match_by": "email", "match_value": "Ann@X.io"}
    assert dedup_keys("contacts", contact) == ["ann@x.io"]
    assert creates(payload) and not creates({"match_by": "id", "match_value": 4})
    assert kind_of("Companies") == "companies" and kind_of("deals") is None


def test_predict_follows_the_service_rule_order_and_source_order() -> None:
    d1, d2, dav, other = hash("d1"), hash("d2"), hash("davenport"), hash("x")
    rows = [
        (1, True, [d1, None, dav]),
        (2, True, [d2, None, dav]),  # another domain, the same name: folds into row 1
        (3, True, [d1, None, other]),  # the domain of row 1: folds into row 1 (domain first)
        (4, False, [d2, None, dav]),  # matched by id: updates its own record, never folds
        (5, True, [d2, None, other]),  # row 2 was held: row 4 claimed d2 first
    ]
    assert predict("companies", rows) == {2: (1, 2), 3: (1, 0), 5: (4, 0)}


def test_predict_lets_rows_with_a_record_claim_first() -> None:
    dav = hash("davenport")
    got = predict("companies", [(1, True, [None, None, dav])], owners=[(9, [None, None, dav])])
    assert got == {1: (9, 2)}


KEYED_ROWS = st.lists(
    st.tuples(
        st.booleans(),  # has a record of its own
        st.booleans(),  # may create
        st.lists(st.one_of(st.none(), st.integers(-4, 4)), min_size=3, max_size=3),
    ),
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(rows=KEYED_ROWS, limit=st.integers(1, 8))
def test_the_scan_simulates_only_rows_sharing_a_key_with_the_same_answers(
    rows: list[tuple[bool, bool, list[int | None]]], limit: int
) -> None:
    """prepare_merges._Keyed (held rows spilled to a file past ``limit``) leaves out the rows
    whose every key is theirs alone: predict answers as over every row."""
    batch = [(i + 1, own, may, keys) for i, (own, may, keys) in enumerate(rows)]
    owners = [(rid, keys) for rid, own, _, keys in batch if own]
    plain = [(rid, may, keys) for rid, own, may, keys in batch if not own]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sizes, "MERGE_SPILL_ROWS", limit)
        keyed = prepare_merges._Keyed(3)
        for start in range(0, len(batch), 3):
            keyed.add(batch[start : start + 3])
        spilled = keyed._spilled
        sparse_rows, sparse_owners = keyed.sharing()
    assert predict("companies", sparse_rows, sparse_owners) == predict("companies", plain, owners)
    assert len(batch) < limit or len(batch) < 3 or spilled


def test_the_merge_scan_spilled_to_a_file_finds_the_same_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = "".join(
        f"Dav{k} LLC,d{k}.example\nDav{k} PLC,e{k}.example\nAcme{k},a{k}.example\nAcme{k} Inc,\n"
        f"Solo{k},s{k}.example\nOther{k},d{k}.example\nAcme{k},x{k}.example\n"
        for k in range(3)
    )
    (tmp_path / "c.csv").write_text("Company,Website\n" + lines)
    (tmp_path / "c.yaml").write_text(
        "object_type: companies\nsource: {path: c.csv, batch_size: 2}\nname: Company\n"
        "match_by: [name]\nduplicates: first\nfields: {domain: Website}\n"
    )
    mapping = load_mapping(tmp_path / "c.yaml")

    def scan() -> dict[int, tuple[int, int]]:
        dups = Duplicates.scan(
            BatchMapper(mapping, base_dir=tmp_path, schema=None, users=None), mapping, tmp_path
        )
        found = scan_merges(
            mapping,
            base_dir=tmp_path,
            schema=None,
            users=None,
            dups=dups,
            owners=lambda ids: np.isin(ids, [3, 9]),  # rows 3 and 9 have a record
        )
        assert found is not None
        return found.hits

    in_memory = scan()
    monkeypatch.setattr(sizes, "MERGE_SPILL_ROWS", 3)
    assert scan() == in_memory
    assert len(in_memory) >= 6

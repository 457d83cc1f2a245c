"""The in-doubt resend rule, for every kind of entry: which may go again as they are."""

from typing import Any

import pytest

from recordsync.core.safety import chunk_interferes, resend_as_is_safe, rewrites_dedup_key

CASES: list[tuple[str, str, dict[str, Any], bool]] = [
    ("id", "deals", {"name": "D", "match_by": "id", "match_value": 7}, True),
    ("id as text", "companies", {"name": "C", "match_by": "id", "match_value": "7"}, True),
    ("id without value", "deals", {"name": "D", "match_by": "id"}, False),
    ("email", "contacts", {"name": "A", "match_by": "email", "match_value": "a@x.io"}, True),
    ("name == name", "deals", {"name": "D", "match_by": "name", "match_value": "D"}, True),
    ("name != name", "deals", {"name": "New", "match_by": "name", "match_value": "Old"}, False),
    (
        "name != name, contact",
        "contacts",
        {"name": "B", "match_by": "name", "match_value": "A"},
        False,
    ),
    ("contact with email", "contacts", {"name": "A", "fields": {"email": "a@x.io"}}, True),
    ("contact, singular slug", "contact", {"name": "A", "fields": {"email": "a@x.io"}}, True),
    ("contact without email", "contacts", {"name": "A", "fields": {"phone": "123"}}, False),
    ("contact with blank email", "contacts", {"name": "A", "fields": {"email": "  "}}, False),
    ("company with domain", "companies", {"name": "C", "fields": {"domain": "c.io"}}, True),
    ("company without domain", "companies", {"name": "C", "fields": {}}, False),
    ("custom object, no key", "deals", {"name": "D", "fields": {"stage": "won"}}, False),
    (
        "custom object with an email field",
        "deals",
        {"name": "D", "fields": {"email": "a@x.io"}},
        False,
    ),
    (
        "custom object with a domain field",
        "deals",
        {"name": "D", "fields": {"domain": "d.io"}},
        False,
    ),
    # ledger-keyed (ledger_key + match_by_ledger_id): known to the ledger → match_by id;
    # a first send has no key the service knows
    ("ledger-keyed, known", "deals", {"name": "D", "match_by": "id", "match_value": 12}, True),
    ("ledger-keyed, first send", "deals", {"name": "D", "fields": {"stage": "won"}}, False),
    (
        "unknown match_by",
        "contacts",
        {"name": "A", "match_by": "phone", "match_value": "1", "fields": {"email": "a@x.io"}},
        False,
    ),
]


@pytest.mark.parametrize(("kind", "object_type", "entry", "safe"), CASES, ids=[c[0] for c in CASES])
def test_resend_as_is_safe(kind: str, object_type: str, entry: dict[str, Any], safe: bool) -> None:
    assert resend_as_is_safe(object_type, entry) is safe


def test_companies_matched_by_name_that_set_a_domain_do_not_interfere() -> None:
    # the sample mapping: match_by name (or the ledger's id), a domain set on every entry
    chunk = [
        {
            "name": "Acme",
            "match_by": "name",
            "match_value": "Acme",
            "fields": {"domain": "acme.io"},
        },
        {"name": "Bolt", "match_by": "id", "match_value": 4, "fields": {"domain": "bolt.io"}},
    ]
    assert not chunk_interferes("companies", chunk)
    # ... unless another entry of the chunk is found by its domain
    relies = {"name": "Cog", "fields": {"domain": "cog.io"}}
    assert chunk_interferes("companies", [*chunk, relies])
    assert chunk_interferes("companies", [relies, *chunk])


def test_an_entry_matched_by_email_that_changes_its_email_interferes_alone() -> None:
    entry = {
        "name": "A",
        "match_by": "email",
        "match_value": "a@x.io",
        "fields": {"email": "b@x.io"},
    }
    assert chunk_interferes("contacts", [entry])


def test_emails_are_told_apart_as_the_service_lower_cases_them() -> None:
    # "STRASSE" is the upper case of both: only lower-casing keeps them two records
    one = {"name": "A", "fields": {"email": "straße@x.io"}}
    two = {"name": "B", "fields": {"email": "strasse@x.io"}}
    assert not chunk_interferes("contacts", [one, two])
    assert chunk_interferes("contacts", [one, {"name": "C", "fields": {"email": "STRAßE@x.io"}}])


def test_what_rewrites_a_dedup_key() -> None:
    email = {"email": "a@x.io"}
    assert rewrites_dedup_key(
        "contacts", {"name": "A", "match_by": "id", "match_value": 3, "fields": email}
    )
    assert rewrites_dedup_key(
        "contacts", {"name": "A", "match_by": "name", "match_value": "A", "fields": email}
    )
    # no email set, or no fields at all: the key stays
    assert not rewrites_dedup_key(
        "contacts", {"name": "A", "match_by": "id", "match_value": 3, "fields": {"phone": "1"}}
    )
    assert not rewrites_dedup_key("contacts", {"name": "A", "match_by": "id", "match_value": 3})
    assert not rewrites_dedup_key(
        "deals", {"name": "A", "match_by": "id", "match_value": 3, "fields": email}
    )


def test_entries_matched_by_one_email_interfere() -> None:
    one = {"name": "A", "match_by": "email", "match_value": "a@x.io"}
    assert chunk_interferes("contacts", [one, {**one, "name": "B", "match_value": "A@X.io"}])
    assert not chunk_interferes("contacts", [one, {**one, "name": "B", "match_value": "b@x.io"}])


def test_entries_matched_by_id_that_set_one_email_interfere() -> None:
    one = {"name": "A", "match_by": "id", "match_value": 1, "fields": {"email": "a@x.io"}}
    assert chunk_interferes("contacts", [one, {**one, "name": "B", "match_value": 2}])


def test_two_renames_of_one_name_interfere() -> None:
    one = {"name": "N1", "match_by": "name", "match_value": "Old"}
    assert chunk_interferes("deals", [one, {**one, "name": "N2"}])
    # alone, a rename touches no other entry's record
    assert not chunk_interferes("deals", [one])


def test_an_id_that_reads_like_another_entrys_name_does_not_interfere() -> None:
    chunk = [{"name": "Seven", "match_by": "id", "match_value": "7"}, {"name": "7"}]
    assert not chunk_interferes("deals", chunk)


def test_entries_without_a_fields_mapping_are_judged_by_their_keys() -> None:
    bare = {"name": "A", "fields": None}
    assert not resend_as_is_safe("contacts", bare)
    assert not chunk_interferes("contacts", [bare, {"name": "B", "fields": None}])

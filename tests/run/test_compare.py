"""A record read back compared with what was sent: the service's documented
normalisations are no difference; every other change is."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.run.compare import ABSENT, differences, expected_values, same, shown
from recordsync.validate.schema import FieldDef, ObjectType

CONTACTS = ObjectType(
    1,
    "contacts",
    "Contacts",
    "contact",
    {
        "email": FieldDef("email", "email"),
        "phone": FieldDef("phone", "phone"),
        "signed_up_at": FieldDef("signed_up_at", "datetime"),
        "tags": FieldDef("tags", "select", allow_multiple=True),
        "lead_score": FieldDef("lead_score", "number"),
        "owned_by_user_id": FieldDef("owned_by_user_id", "user"),
        "job_title": FieldDef("job_title", "text"),
        "company_id": FieldDef("company_id", "relationship"),
        "last_contacted": FieldDef("last_contacted", "date"),
    },
)


@pytest.mark.parametrize(
    ("field", "sent", "stored"),
    [
        ("email", " Ada@Example.COM ", "ada@example.com"),
        ("phone", " +1 (555) 010-0200 ", "+15550100200"),
        ("signed_up_at", "2026-01-02T03:04:05.123456+02:00", "2026-01-02T01:04:05.123Z"),
        ("signed_up_at", "2026-01-02T01:04:05", "2026-01-02T01:04:05.000Z"),
        ("tags", ["vip", "partner"], ["partner", "vip"]),
        ("lead_score", 42.0, 42),
        (
            "owned_by_user_id",
            "AB12CD34-0000-4000-8000-000000000001",
            "ab12cd34-0000-4000-8000-000000000001",
        ),
        ("company_id", 7, 7),
        ("job_title", None, ABSENT),
        ("profile_image_url", " https://x.example/a.png", "https://x.example/a.png"),
    ],
)
def test_normalised_values_are_the_same(field: str, sent: Any, stored: Any) -> None:
    record = {} if stored is ABSENT else {field: stored}
    assert differences({field: sent}, record, CONTACTS) == []


@pytest.mark.parametrize(
    ("field", "sent", "stored"),
    [
        ("email", "ada@example.com", "ada@example.org"),
        ("phone", "+1 555 010 0200", "+1 555 010 0201"),
        ("signed_up_at", "2026-01-02T03:04:05+02:00", "2026-01-02T03:04:05.000Z"),
        ("tags", ["vip", "partner"], ["vip"]),
        ("lead_score", 42, 43),
        ("lead_score", 42, "42x"),
        ("job_title", "Engineer", "engineer"),
        ("job_title", "Engineer", None),
        ("job_title", "Engineer", ABSENT),
        ("job_title", None, "Engineer"),
        ("company_id", 7, [7]),
        ("last_contacted", "2026-01-02", "2026-01-03"),
        ("name", "Ada", "Ada "),
    ],
)
def test_other_changes_are_differences(field: str, sent: Any, stored: Any) -> None:
    record = {} if stored is ABSENT else {field: stored}
    (diff,) = differences({field: sent}, record, CONTACTS)
    assert (diff.field, diff.sent, diff.stored) == (field, sent, stored)


def test_later_writes_to_the_record_win() -> None:
    first = {"name": "Ada", "fields": {"email": "a@x.io", "job_title": "Eng"}}
    later = {"name": "Ada L", "fields": {"job_title": "CTO"}, "profile_image_url": None}
    assert expected_values([first, later]) == {
        "name": "Ada L",
        "email": "a@x.io",
        "job_title": "CTO",
        "profile_image_url": None,
    }


def test_shown_values() -> None:
    assert shown(ABSENT) == "(absent)"
    assert shown("é") == '"é"'
    assert len(shown("x" * 1000)) == 200


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)
KINDS = st.sampled_from(
    ["", "text", "email", "phone", "url", "user", "datetime", "number", "relationship", "date"]
)


@given(kind=KINDS, value=JSON)
def test_a_value_read_back_as_sent_is_always_the_same(kind: str, value: Any) -> None:
    assert same(kind, isinstance(value, list), value, value)


@given(value=st.text().filter(lambda t: t.strip() != ""), other=st.text())
def test_text_differs_exactly_when_it_is_other_text(value: str, other: str) -> None:
    assert same("text", False, value, other) is (value == other)

"""What counts as a record holding an entry's values when reading back (the service
normalises some values: e-mails lower-cased, datetimes in UTC with Z, 7.0 stored as 7)."""

from typing import Any

import pytest

from recordsync.send.settle import holds

RECORD = {
    "id": 4,
    "name": "Ann",
    "email": "ann@x.io",
    "close": "2026-01-02T02:04:05.000Z",
    "amount": 7,
    "won": True,
    "tags": ["a", "b"],
    "notes": None,
}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"email": "Ann@X.io"}, True),
        ({"close": "2026-01-02T03:04:05+01:00"}, True),
        ({"amount": 7.0}, True),
        ({"won": True, "tags": ["a", "b"], "notes": None}, True),
        ({"amount": 8}, False),
        ({"won": 1}, False),
        ({"tags": ["b", "a"]}, False),
        ({"close": "2026-01-02T03:04:05Z"}, False),
        ({"missing": "x"}, False),
        ({"amount": "7"}, False),
        ({"email": 7}, False),
        ({"notes": ["a"]}, False),
        ({"tags": ["A ", "b"]}, True),
        ({"tags": ["a"]}, False),
    ],
)
def test_holds(fields: dict[str, Any], expected: bool) -> None:
    assert holds(RECORD, {"name": "Ann", "fields": fields}) is expected


def test_names_compare_like_other_text() -> None:
    # (reading back keeps only records of exactly the same name before asking this)
    assert holds(RECORD, {"name": "ANN"})
    assert not holds(RECORD, {"name": "Anne"})


def test_the_profile_image_is_compared_like_a_field() -> None:
    record = {**RECORD, "profile_image_url": "https://x.io/a.png"}
    assert holds(record, {"name": "Ann", "profile_image_url": "https://x.io/a.png"})
    assert not holds(record, {"name": "Ann", "profile_image_url": "https://x.io/b.png"})

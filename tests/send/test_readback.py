"""Reading the records of one name back: ids, timestamps and the service's Date header."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from recordsync.send.readback import NameReader, record_id, when

from .support import fake_client


@pytest.mark.parametrize(
    ("value", "expected"),
    [(7, 7), (" 7 ", 7), ("x7", None), (None, None), (True, None), (7.0, None)],
)
def test_record_id(value: Any, expected: int | None) -> None:
    assert record_id({"id": value}) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1970-01-01T00:01:00Z", 60.0),
        (" 1970-01-01T01:01:00+01:00 ", 60.0),
        ("1970-01-01T00:01:00", None),  # no offset: no instant
        ("yesterday", None),
        (60, None),
    ],
)
def test_when(value: Any, expected: float | None) -> None:
    assert when(value) == expected


def written_since(date: str) -> float | None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"data": [], "pagination": {"has_more": False}}
        return httpx.Response(200, json=body, headers={"date": date})

    reader = NameReader(fake_client(handler), "deals", clock=lambda: 1000.0)
    return reader.written_since("A", 1000.0)[1]


def test_the_service_clock_is_read_from_the_date_header() -> None:
    assert written_since("Thu, 01 Jan 1970 00:01:00 GMT") == 60.0
    # "-0000": RFC 5322's "the offset is unknown": no instant, so no time bound
    assert written_since("Thu, 01 Jan 1970 00:01:00 -0000") is None
    assert written_since("not a date") is None

"""Reading the records of one name back: ids, timestamps and the service's Date header."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from recordsync.send.readback import MAX_PAGES, PAGE, NameReader, Unreadable, record_id, when

from .support import Sleeps, fake_client


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


AT = "1970-01-01T00:01:00Z"  # the Date below: with since == clock, nothing older counts
DATE = "Thu, 01 Jan 1970 00:01:00 GMT"


def pager(
    held: list[Any], seen: list[dict[str, str]], has_more: bool | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    """A list endpoint paging ``held`` by offset and limit; ``seen``: each request's query."""

    def handler(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        seen.append(params)
        start, limit = int(params["offset"]), int(params["limit"])
        page = held[start : start + limit]
        more = start + limit < len(held) if has_more is None else has_more
        return httpx.Response(
            200, json={"data": page, "pagination": {"has_more": more}}, headers={"date": DATE}
        )

    return handler


def reader(handler: Callable[[httpx.Request], httpx.Response], **kw: Any) -> NameReader:
    return NameReader(fake_client(handler, **kw), "deals", clock=lambda: 1000.0)


def test_pages_are_read_newest_first_until_the_last() -> None:
    seen: list[dict[str, str]] = []
    held: list[Any] = [{"id": i, "name": "A", "updated_at": AT} for i in range(PAGE)]
    held += [{"id": 1000, "name": "Ann"}, "not a record", {"name": "A", "updated_at": AT}]
    held += [{"id": 999, "name": "A", "updated_at": AT}]  # after records that do not count
    found, server_since = reader(pager(held, seen)).written_since("A", 1000.0)
    assert [r["id"] for r in found] == [*range(PAGE), 999]
    assert server_since == 60.0
    query = {"filter[name]": "A", "sort_by": "updated_at", "sort_order": "desc"}
    assert seen == [
        {**query, "limit": str(PAGE), "offset": "0"},
        {**query, "limit": str(PAGE), "offset": str(PAGE)},
    ]


def test_paging_stops_at_the_first_record_written_before() -> None:
    seen: list[dict[str, str]] = []
    held = [{"id": 1, "name": "A", "updated_at": AT}]
    held += [{"id": 2, "name": "A", "updated_at": "1970-01-01T00:00:59Z"}]
    found, _ = reader(pager(held, seen, has_more=True)).written_since("A", 1000.0)
    assert [r["id"] for r in found] == [1] and len(seen) == 1
    # with no time asked for, every record of the name counts (and paging goes on)
    found, server_since = reader(pager(held, [], has_more=False)).written_since("A", None)
    assert [r["id"] for r in found] == [1, 2] and server_since is None


def test_too_many_records_of_one_name_are_unreadable() -> None:
    held = [{"id": i, "name": "A", "updated_at": AT} for i in range(PAGE * MAX_PAGES + 1)]
    with pytest.raises(Unreadable, match=r"^more than 1000 records are named like 'A'$"):
        reader(pager(held, [])).written_since("A", 1000.0)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (httpx.Response(200, json={"items": []}), "GET /api/objects/deals: the answer has no"),
        (httpx.Response(200, json=[]), "GET /api/objects/deals: the answer has no 'data' list"),
        (httpx.Response(200, text="<html>"), "GET /api/objects/deals: answer is not JSON"),
        (httpx.Response(405, json={}), "the target has no record list endpoint (GET /api/"),
        (httpx.Response(404, json={}), "the target has no record list endpoint (GET /api/"),
        (httpx.Response(400, json={"error": "bad filter"}), "GET /api/objects/deals: HTTP 400"),
    ],
)
def test_a_read_that_fails_is_unreadable(answer: httpx.Response, why: str) -> None:
    with pytest.raises(Unreadable) as caught:
        reader(lambda request: answer).written_since("A", 1000.0)
    assert str(caught.value).startswith(why)


def test_a_target_without_a_list_endpoint_is_named() -> None:
    with pytest.raises(Unreadable) as caught:
        reader(lambda request: httpx.Response(404, json={})).written_since("A", 1000.0)
    assert str(caught.value).endswith(
        "), so this entry was neither resent by another key nor read back"
    )


def test_a_read_is_retried_within_the_clients_budget() -> None:
    answers = iter([httpx.Response(503, json={}), httpx.Response(429, json={})])
    sleeps = Sleeps()

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or pager([{"id": 1, "name": "A"}], [])(request)

    found, _ = reader(handler, sleeps=sleeps).written_since("A", 1000.0)
    assert [r["id"] for r in found] == [1] and len(sleeps) == 2
    always = httpx.Response(503, json={})
    with pytest.raises(Unreadable, match="503"):
        reader(lambda request: always, max_attempts=2).written_since("A", 1000.0)

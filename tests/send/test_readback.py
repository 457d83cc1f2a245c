"""Reading back: ids, timestamps, the marks on the service's own clock, records of one name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from recordsync.send.readback import (
    EMPTY,
    MAX_PAGES,
    PAGE,
    Gone,
    Mark,
    NameReader,
    Unreadable,
    record_id,
    when,
)

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


AT = "1970-01-01T00:01:00Z"
MARK = Mark(60.0)  # AT: records stamped at the mark count, older ones do not
DATE = "Thu, 01 Jan 1970 01:00:00 GMT"  # an hour after every record: never looked at


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
    return NameReader(fake_client(handler, **kw), "deals")


def test_pages_are_read_newest_first_until_the_last() -> None:
    seen: list[dict[str, str]] = []
    held: list[Any] = [{"id": i, "name": "A", "updated_at": AT} for i in range(PAGE)]
    held += [{"id": 1000, "name": "Ann"}, "not a record", {"name": "A", "updated_at": AT}]
    held += [{"id": 999, "name": "A", "updated_at": AT}]  # after records that do not count
    found = reader(pager(held, seen)).written_since("A", MARK)
    assert [r["id"] for r in found] == [*range(PAGE), 999]
    query = {"filter[name]": "A", "sort_by": "updated_at", "sort_order": "desc"}
    assert seen == [
        {**query, "limit": str(PAGE), "offset": "0"},
        {**query, "limit": str(PAGE), "offset": str(PAGE)},
    ]


def test_paging_stops_at_the_first_record_written_before() -> None:
    seen: list[dict[str, str]] = []
    held = [{"id": 1, "name": "A", "updated_at": AT}]
    held += [{"id": 2, "name": "A", "updated_at": "1970-01-01T00:00:59Z"}]
    found = reader(pager(held, seen, has_more=True)).written_since("A", MARK)
    assert [r["id"] for r in found] == [1] and len(seen) == 1
    # with no mark, every record of the name counts (and paging goes on)
    found = reader(pager(held, [], has_more=False)).written_since("A", None)
    assert [r["id"] for r in found] == [1, 2]
    assert [r["id"] for r in reader(pager(held, [])).written_since("A", EMPTY)] == [1, 2]


def test_the_answers_date_header_does_not_move_the_mark() -> None:
    """Only the records' own stamps are compared with the mark: a Date header an hour
    ahead of them (or none at all) reads the same records."""
    held = [{"id": 1, "name": "A", "updated_at": AT}]
    held += [{"id": 2, "name": "A", "updated_at": "1970-01-01T00:00:59.999Z"}]
    for date in (DATE, None):

        def handler(request: httpx.Request, date: str | None = date) -> httpx.Response:
            body = {"data": held, "pagination": {"has_more": False}}
            return httpx.Response(200, json=body, headers={"date": date} if date else {})

        assert [r["id"] for r in reader(handler).written_since("A", MARK)] == [1]


def test_too_many_records_of_one_name_are_unreadable() -> None:
    held = [{"id": i, "name": "A", "updated_at": AT} for i in range(PAGE * MAX_PAGES + 1)]
    with pytest.raises(Unreadable, match=r"^more than 1000 records are named like 'A'$"):
        reader(pager(held, [])).written_since("A", MARK)


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
        reader(lambda request: answer).written_since("A", MARK)
    assert str(caught.value).startswith(why)


def test_a_target_without_a_list_endpoint_is_named() -> None:
    with pytest.raises(Unreadable) as caught:
        reader(lambda request: httpx.Response(404, json={})).written_since("A", MARK)
    assert str(caught.value).endswith(
        "), so this entry was neither resent by another key nor read back"
    )


def test_a_read_is_retried_within_the_clients_budget() -> None:
    answers = iter([httpx.Response(503, json={}), httpx.Response(429, json={})])
    sleeps = Sleeps()

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or pager([{"id": 1, "name": "A"}], [])(request)

    found = reader(handler, sleeps=sleeps).written_since("A", MARK)
    assert [r["id"] for r in found] == [1] and len(sleeps) == 2
    always = httpx.Response(503, json={})
    with pytest.raises(Unreadable, match="503"):
        reader(lambda request: always, max_attempts=2).written_since("A", MARK)


def test_the_newest_stamp_of_the_type_is_a_mark() -> None:
    seen: list[dict[str, str]] = []
    held = [{"id": 7, "name": "Z", "updated_at": AT}, {"id": 3, "name": "Y", "updated_at": AT}]
    assert reader(pager(held, seen)).newest() == Mark(60.0, frozenset({7}))
    assert seen == [{"sort_by": "updated_at", "sort_order": "desc", "limit": "1", "offset": "0"}]
    assert reader(pager([], [])).newest() == EMPTY  # nothing stored yet: every record counts
    with pytest.raises(Unreadable, match="the newest record has no readable updated_at"):
        reader(pager([{"id": 7, "updated_at": "yesterday"}], [])).newest()
    with pytest.raises(Unreadable, match="no record list endpoint"):
        reader(lambda request: httpx.Response(405, json={})).newest()


def one(record: Any, status: int = 200) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        assert dict(request.url.params) == {"id": "7"}
        return httpx.Response(status, json={"data": record} if status == 200 else {})

    return handler


def test_the_creation_stamp_of_a_record_is_a_mark() -> None:
    assert reader(one({"id": 7, "created_at": AT})).created_mark(7) == Mark(60.0, frozenset({7}))
    assert reader(one({"id": "7", "created_at": AT})).created_mark(7).at == 60.0  # id as text
    with pytest.raises(Unreadable, match="the record is gone"):
        reader(one(None, 404)).created_mark(7)
    for record in ({"id": 7}, {"id": 8, "created_at": AT}, [{"id": 7, "created_at": AT}]):
        with pytest.raises(Unreadable):
            reader(one(record)).created_mark(7)


def test_unreadable_marks_name_the_read_that_failed() -> None:
    """What the operator reads when a mark cannot be taken: the request, and why."""
    with pytest.raises(Unreadable, match=r"^GET /api/objects/deals: the answer has no 'data' list"):
        reader(lambda request: httpx.Response(200, json={"data": {}})).newest()
    with pytest.raises(Unreadable, match=r"^GET /api/objects/deals: the answer has no 'data' dict"):
        reader(one([])).created_mark(7)
    with pytest.raises(Unreadable, match=r"^GET /api/objects/deals\?id=7: no readable created_at"):
        reader(one({"id": 7})).created_mark(7)


def test_a_newest_entry_that_is_no_record_is_unreadable_not_a_crash() -> None:
    with pytest.raises(Unreadable, match="the newest record has no readable updated_at"):
        reader(pager(["not a record"], [])).newest()


def test_a_newest_record_without_an_id_marks_no_record() -> None:
    assert reader(pager([{"updated_at": AT}], [])).newest() == Mark(60.0, frozenset())


def test_a_record_after_an_older_one_still_counts() -> None:
    """A service that does not sort strictly newest first (equal stamps, another order):
    a record stamped after the mark is read back wherever it stands on the page."""
    held = [{"id": 1, "name": "A", "updated_at": "1970-01-01T00:00:59Z"}]
    held += [{"id": 2, "name": "A", "updated_at": AT}]
    found = reader(pager(held, [], has_more=False)).written_since("A", MARK)
    assert [r["id"] for r in found] == [2]


def test_a_record_is_read_by_its_id() -> None:
    record = {"id": 7, "name": "A", "amount": 3}
    assert reader(one(record)).record(7) == record
    assert reader(one({"id": "7", "name": "A"})).record(7) == {"id": "7", "name": "A"}


def test_a_record_read_by_id_asks_for_its_type() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return one({"id": 7})(request)

    reader(handler).record(7)
    assert paths == ["/api/objects/deals"]


def test_a_record_that_is_not_there_is_gone() -> None:
    """A 404 on a read by id says the record is gone, not that there is no list endpoint."""
    with pytest.raises(Gone, match=r"^GET /api/objects/deals: the record is gone \(GET "):
        reader(one(None, 404)).record(7)


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"id": 8, "name": "A"}, r"^GET /api/objects/deals\?id=7: the answer is another record$"),
        ({"name": "A"}, r"^GET /api/objects/deals\?id=7: the answer is another record$"),
        ([{"id": 7}], r"^GET /api/objects/deals: the answer has no 'data' dict$"),
        (None, r"^GET /api/objects/deals: the answer has no 'data' dict$"),
    ],
)
def test_a_record_read_by_id_that_is_not_that_record_is_unreadable(record: Any, why: str) -> None:
    with pytest.raises(Unreadable, match=why) as caught:
        reader(one(record)).record(7)
    assert not isinstance(caught.value, Gone)


def test_the_reader_counts_every_request_it_sent() -> None:
    """``tries``: each request, retries included (none before the first read)."""
    answers = iter([httpx.Response(503, json={}), httpx.Response(429, json={})])

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or one({"id": 7})(request)

    counted = reader(handler)
    assert counted.tries == 0
    counted.record(7)
    assert counted.tries == 3
    counted.record(7)
    assert counted.tries == 4

"""Settling a lost answer entry by entry, against a list endpoint whose records the test fixes
(the sandbox's timestamps cannot be pinned to the second), after a fixed mark."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import RowStatus
from recordsync.send.readback import EMPTY, Mark, when
from recordsync.send.settle import (
    EARLIER_RUN_MARGIN_S,
    Decision,
    Settler,
    earlier_run_mark,
    earlier_send_doubt,
    lost_answer_doubt,
)

from .support import Handler, fake_client

DATE = "Wed, 25 Nov 2026 11:00:00 GMT"  # the answers' Date, an hour ahead: never looked at
AT = "2026-11-25T10:00:00Z"  # the chunk's mark, on the clock that stamps records
MARK = Mark(when(AT) or 0.0)
EARLIER = "2026-11-25T09:00:00Z"
RENAME = {"name": "New", "match_by": "name", "match_value": "Old", "fields": {"stage": "won"}}


def record(rid: int, name: str, created: str = AT, **fields: Any) -> dict[str, Any]:
    return {"id": rid, "name": name, "created_at": created, "updated_at": AT, **fields}


def listing(held: list[dict[str, Any]], date: str = DATE) -> Handler:
    """A list endpoint over ``held`` (filter[name] as a case-insensitive substring)."""

    def handler(request: httpx.Request) -> httpx.Response:
        params = request.url.params
        assert (params["sort_by"], params["sort_order"]) == ("updated_at", "desc")
        wanted = params["filter[name]"].casefold()
        data = [r for r in held if wanted in r["name"].casefold()]
        body = {"data": data, "pagination": {"has_more": False}}
        return httpx.Response(200, json=body, headers={"date": date})

    return handler


def settle(
    held: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    claimed: set[int] | None = None,
    mark: Mark | None = MARK,
) -> dict[int, Decision]:
    settler = Settler(fake_client(listing(held)), "deals")
    claimed = claimed if claimed is not None else set()
    return settler.settle(entries, list(range(len(entries))), mark, claimed)


def test_an_entry_without_a_name_is_unknown_and_the_next_is_still_decided() -> None:
    out = settle([], [{"fields": {"stage": "won"}}, {"name": "B", "fields": {}}])
    assert out == {
        0: Decision("unknown", why="the entry has no name to look it up by"),
        1: Decision("absent"),
    }


def test_a_target_without_a_list_endpoint_leaves_every_entry_unknown() -> None:
    client = fake_client(lambda request: httpx.Response(404, json={"error": "not found"}))
    entries: list[dict[str, Any]] = [dict(RENAME), {"name": "B", "fields": {}}]
    out = Settler(client, "deals").settle(entries, [0, 1], MARK, set())
    assert [d.kind for d in out.values()] == ["unknown", "unknown"]
    for decision in out.values():
        assert decision.why.startswith("it could not be read back: the target has no record list")


def test_a_rename_that_created_its_record_is_applied_as_created() -> None:
    claimed: set[int] = set()
    out = settle([record(5, "New", stage="won")], [dict(RENAME), {"name": "B"}], claimed)
    assert out == {
        0: Decision("applied", EntryResult(RowStatus.CREATED, 5)),
        1: Decision("absent"),
    }
    assert claimed == {5}


def test_a_rename_of_a_record_created_before_the_chunk_is_an_update() -> None:
    out = settle([record(5, "New", created=EARLIER, stage="won")], [dict(RENAME)])
    assert out == {0: Decision("applied", EntryResult(RowStatus.UPDATED, 5))}


def test_a_rename_of_a_record_this_run_knows_is_an_update() -> None:
    claimed = {5}
    out = settle([record(5, "New", stage="won")], [dict(RENAME)], claimed)
    assert out == {0: Decision("applied", EntryResult(RowStatus.UPDATED, 5))}
    assert claimed == {5}


def test_a_rename_with_the_old_name_still_there_is_unknown() -> None:
    held = [record(5, "New", stage="won"), record(6, "Old", created=EARLIER)]
    out = settle(held, [dict(RENAME)])
    assert out == {
        0: Decision(
            "unknown",
            why="1 record(s) named 'New' with its values were written since the chunk was sent"
            " and 1 named 'Old' are left",
        )
    }


def test_a_rename_without_a_mark_is_unknown() -> None:
    out = settle([record(5, "New", stage="won")], [dict(RENAME)], mark=None)
    assert out[0].kind == "unknown"
    assert "and 0 named 'Old' are left" in out[0].why


def test_a_record_without_a_creation_time_counts_as_updated() -> None:
    held = [{"id": 5, "name": "New", "updated_at": AT, "stage": "won"}]
    assert settle(held, [dict(RENAME)])[0] == Decision("applied", EntryResult(RowStatus.UPDATED, 5))


def deal(name: str, amount: int = 1) -> dict[str, Any]:
    return {"name": name, "fields": {"amount": amount}}


def unknown(named: str, count: int, which: str) -> Decision:
    return Decision(
        "unknown",
        why=f"{count} record(s) named {named!r} were written since the chunk was sent and none"
        f" is known to be another row's ({which})",
    )


def test_the_one_record_holding_an_entrys_values_is_its_record() -> None:
    claimed: set[int] = set()
    held = [record(5, "A", amount=1), record(6, "B", created=EARLIER, amount=2)]
    out = settle(held, [deal("A"), deal("B", 2), deal("C")], claimed)
    assert out == {
        0: Decision("applied", EntryResult(RowStatus.CREATED, 5)),
        1: Decision("applied", EntryResult(RowStatus.UPDATED, 6)),
        2: Decision("absent"),
    }
    assert claimed == {5, 6}


def test_a_record_another_entry_claimed_is_not_this_ones() -> None:
    assert settle([record(5, "A", amount=1)], [deal("A")], {5}) == {0: Decision("absent")}


def test_a_record_written_before_the_chunk_does_not_count() -> None:
    old = {**record(5, "A", amount=1), "updated_at": EARLIER}
    assert settle([old], [deal("A")]) == {0: Decision("absent")}


def test_records_that_do_not_settle_an_entry_say_why() -> None:
    held = [record(5, "A", amount=9), record(6, "B", amount=1), record(7, "B", amount=1)]
    held += [record(8, "T", amount=1)]
    entries = [deal("A"), deal("B"), deal("T"), deal("T"), deal("Z")]
    out = settle(held, entries)
    assert out == {
        0: unknown("A", 1, "none holds this row's values"),
        1: unknown("B", 2, "2 hold this row's values"),
        2: unknown("T", 1, "another entry of this chunk has the same name and values"),
        3: unknown("T", 1, "another entry of this chunk has the same name and values"),
        4: Decision("absent"),
    }


def test_without_a_mark_only_absent_is_decided() -> None:
    out = settle([record(5, "A", amount=1)], [deal("A"), deal("B")], mark=None)
    no_mark = (
        "the service's newest record could not be read before the chunk was sent, to tell"
        " which were written since"
    )
    assert out == {0: unknown("A", 1, no_mark), 1: Decision("absent")}


def test_records_seen_at_the_mark_were_written_before_it() -> None:
    """Stamps may be equal: the record the mark was read from is no entry's, another stamped
    in the same instant is (and created by the chunk)."""
    held = [record(5, "A", amount=1), record(6, "A", amount=1)]
    out = settle(held, [deal("A")], mark=Mark(MARK.at, frozenset({5})))
    assert out == {0: Decision("applied", EntryResult(RowStatus.CREATED, 6))}
    renamed = record(5, "New", stage="won")  # the mark's record, renamed by the chunk
    out = settle([renamed], [dict(RENAME)], mark=Mark(MARK.at, frozenset({5})))
    assert out == {0: Decision("applied", EntryResult(RowStatus.UPDATED, 5))}


def test_an_empty_type_marks_every_record_as_new() -> None:
    held = [{**record(5, "A", created=EARLIER, amount=1), "updated_at": EARLIER}]
    out = settle(held, [deal("A")], mark=EMPTY)
    assert out == {0: Decision("applied", EntryResult(RowStatus.CREATED, 5))}


def test_an_earlier_run_is_read_back_since_its_start_less_the_margin() -> None:
    mark = earlier_run_mark(1000.0)
    assert mark == Mark(1000.0 - EARLIER_RUN_MARGIN_S) and EARLIER_RUN_MARGIN_S >= 60


def test_doubt_messages_say_what_to_do_next() -> None:
    why = Decision("unknown", why="2 hold this row's values")
    lost = lost_answer_doubt("HTTP 502", why).error or ""
    assert lost.endswith("2 hold this row's values; check the target, then retry or drop it")
    earlier = earlier_send_doubt(why)
    assert earlier.status is RowStatus.IN_DOUBT and earlier.record_id is None
    assert earlier.error == (
        "held in doubt: an earlier send of this row may have been applied and it cannot be"
        " resent without risking a duplicate: 2 hold this row's values; check the target,"
        " then `recordsync retry --resend-in-doubt` the report"
    )


def test_a_record_without_a_creation_time_counts_as_updated_on_any_mark() -> None:
    held = [{"id": 5, "name": "New", "updated_at": "1970-01-01T00:00:02Z", "stage": "won"}]
    held += [{"id": 6, "name": "A", "updated_at": "1970-01-01T00:00:02Z", "amount": 1}]
    out = settle(held, [dict(RENAME), deal("A")], mark=Mark(1.0))
    assert out == {
        0: Decision("applied", EntryResult(RowStatus.UPDATED, 5)),
        1: Decision("applied", EntryResult(RowStatus.UPDATED, 6)),
    }


def test_a_rename_with_no_record_of_its_new_name_is_absent() -> None:
    assert settle([record(6, "Old")], [dict(RENAME)]) == {0: Decision("absent")}


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "A", "match_by": "email", "match_value": "a@x.io", "fields": {"amount": 1}},
        {"name": "A", "match_by": "name", "match_value": "A", "fields": {"amount": 1}},
        {"name": "A", "match_by": "id", "match_value": 5, "fields": {"amount": 1}},
    ],
)
def test_only_a_match_by_another_name_is_read_back_as_a_rename(entry: dict[str, Any]) -> None:
    out = settle([record(5, "A", amount=9)], [entry])
    assert out == {0: unknown("A", 1, "none holds this row's values")}


@pytest.mark.parametrize("name", ["", 7, None])
def test_an_entry_whose_name_is_not_text_is_unknown(name: Any) -> None:
    out = settle([record(5, "7", amount=1)], [{"name": name, "fields": {"amount": 1}}])
    assert out == {0: Decision("unknown", why="the entry has no name to look it up by")}


def test_a_lost_answer_leaves_the_entry_in_doubt() -> None:
    result = lost_answer_doubt("HTTP 502", Decision("unknown", why="w"))
    assert result.status is RowStatus.IN_DOUBT and result.record_id is None
    assert (result.error or "").startswith("in doubt: HTTP 502; the batch may have been applied")

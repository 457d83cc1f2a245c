"""Lost answers settled by reading the sandbox back, over a real socket with injected faults."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from recordsync.send.sender import ChunkSender

from .support import loopback, records

BATCH = "path=/batch"


def statuses(report: Any) -> list[str]:
    return [r.status.value for r in report.results]


def names(held: list[dict[str, Any]]) -> Counter[str]:
    return Counter(r["name"] for r in held)


def deal(name: str, amount: int = 1) -> dict[str, Any]:
    return {"name": name, "fields": {"stage": "won", "amount": amount}}


@pytest.mark.parametrize(
    "fault", ["drop-after-apply", "status-after-apply:502", "html-after-apply:504"]
)
def test_an_applied_chunk_is_read_back_not_resent(tmp_path: Path, fault: str) -> None:
    with loopback(tmp_path, [f"{fault}:{BATCH}"]) as client:
        report = ChunkSender(client, "deals").send("c", 2, [deal("A", 1), deal("B", 2)])
        held = records(client, "deals")
    assert statuses(report) == ["created", "created"]
    assert report.attempts == 1 and report.settled_by_reading == 2
    by_name = {r["name"]: r["id"] for r in held}
    assert [r.record_id for r in report.results] == [by_name["A"], by_name["B"]]
    assert names(held) == {"A": 1, "B": 1}


@pytest.mark.parametrize("fault", ["drop", "html:502"])
def test_a_chunk_never_applied_is_resent_as_it_was(tmp_path: Path, fault: str) -> None:
    with loopback(tmp_path, [f"{fault}:every=2:{BATCH}"]) as client:
        sender = ChunkSender(client, "deals")
        sender.send("c1", 2, [deal("Earlier")])
        report = sender.send("c2", 3, [deal("A"), deal("B")])
        held = records(client, "deals")
    assert statuses(report) == ["created", "created"]
    assert report.attempts == 2
    assert names(held) == {"Earlier": 1, "A": 1, "B": 1}


def test_html_error_page_is_named_in_the_reason(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"html:502:{BATCH}"], max_attempts=2) as client:
        report = ChunkSender(client, "deals").send("c", 2, [deal("A")])
    assert statuses(report) == ["failed"]
    error = report.results[0].error or ""
    assert "HTTP 502: Bad Gateway: an HTML error page ('502 Bad Gateway')" in error
    assert "<html>" not in error and "read back: not applied" in error


def test_twins_of_one_applied_chunk_are_held_with_the_true_reason(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"drop-after-apply:{BATCH}"]) as client:
        chunk = [deal("Twin"), deal("Twin"), deal("Solo")]
        report = ChunkSender(client, "deals").send("c", 2, chunk)
        held = records(client, "deals")
    assert statuses(report) == ["in_doubt", "in_doubt", "created"]
    assert "2 hold this row's values" in (report.results[0].error or "")
    assert names(held) == {"Twin": 2, "Solo": 1}  # applied once by the lost try, never resent


def test_twins_with_their_own_values_are_each_read_back(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"drop-after-apply:{BATCH}"]) as client:
        report = ChunkSender(client, "deals").send("c", 2, [deal("Twin", 1), deal("Twin", 2)])
        held = records(client, "deals")
    assert statuses(report) == ["created", "created"]
    amounts = {r["id"]: r["amount"] for r in held}
    assert [amounts[r.record_id] for r in report.results] == [1, 2]


def test_a_record_of_an_earlier_chunk_is_never_taken_for_a_later_row(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"drop-after-apply:every=2:{BATCH}"]) as client:
        sender = ChunkSender(client, "deals")
        first = sender.send("c1", 2, [deal("Same", 1)])
        second = sender.send("c2", 3, [deal("Same", 2)])
        held = records(client, "deals")
    assert statuses(first) == statuses(second) == ["created"]
    assert first.results[0].record_id != second.results[0].record_id
    amounts = {r["id"]: r["amount"] for r in held}
    assert amounts == {first.results[0].record_id: 1, second.results[0].record_id: 2}


def test_someone_elses_record_of_that_name_is_not_taken(tmp_path: Path) -> None:
    # another writer made "Same" just before; the lost chunk was never applied
    with loopback(tmp_path, [f"drop:every=2:{BATCH}"]) as client:
        other = ChunkSender(client, "deals")
        other.send("theirs", 2, [deal("Same", 9)])
        report = ChunkSender(client, "deals").send("c", 2, [deal("Same", 1)])
        held = records(client, "deals")
    # either read back as absent (older than the chunk) and resent, or held: never taken
    assert statuses(report) in (["created"], ["in_doubt"])
    assert sorted(r["amount"] for r in held) == ([1, 9] if statuses(report) == ["created"] else [9])
    if statuses(report) == ["created"]:
        assert report.results[0].record_id != held[0]["id"]


class ShortPosts(httpx.Client):
    """Gives up on a POST's answer after 0.3 s; reads keep the client's 10 s."""

    def send(self, request: httpx.Request, **kw: Any) -> httpx.Response:
        if request.method == "POST":
            request.extensions["timeout"] = httpx.Timeout(10.0, read=0.3).as_dict()
        return super().send(request, **kw)


def test_timeout_after_apply_is_read_back(tmp_path: Path) -> None:
    # the server never answers the batch at all, so the client's short read timeout always
    # fires; the read-back is answered once the write is done (the sandbox makes it wait)
    with loopback(tmp_path, [f"timeout-after-apply:{BATCH}"], max_attempts=2) as client:
        client.http = ShortPosts(timeout=httpx.Timeout(10.0))
        try:
            report = ChunkSender(client, "deals").send("c", 2, [deal("Late")])
            held = records(client, "deals")
        finally:
            client.http.close()
    assert statuses(report) == ["created"] and report.attempts == 1
    assert "waiting for the answer" in (report.last_problem or "")
    assert report.results[0].record_id == held[0]["id"] and len(held) == 1


def test_name_renames_are_read_back(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"drop-after-apply:every=2:{BATCH}"]) as client:
        sender = ChunkSender(client, "deals")
        sender.send("c1", 2, [deal("Old")])
        rename = {**deal("New", 5), "match_by": "name", "match_value": "Old"}
        report = sender.send("c2", 3, [rename])
        held = records(client, "deals")
    assert statuses(report) == ["updated"]
    assert [(r["name"], r["amount"]) for r in held] == [("New", 5)]


def test_a_rename_never_applied_is_resent_as_it_was(tmp_path: Path) -> None:
    with loopback(tmp_path, [f"drop:every=2:{BATCH}"]) as client:
        sender = ChunkSender(client, "deals")
        sender.send("c1", 2, [deal("Old")])
        rename = {**deal("New", 5), "match_by": "name", "match_value": "Old"}
        report = sender.send("c2", 3, [rename])
        held = records(client, "deals")
    assert statuses(report) == ["updated"] and report.attempts == 2
    assert [(r["name"], r["amount"]) for r in held] == [("New", 5)]


def test_an_unreadable_target_holds_unsafe_entries_and_resends_safe_ones(tmp_path: Path) -> None:
    faults = [f"drop-after-apply:every=2:{BATCH}", "status:405:method=GET:path=/objects/contacts"]
    with loopback(tmp_path, faults) as client:
        sender = ChunkSender(client, "contacts")
        sender.send("c1", 2, [{"name": "First", "fields": {"email": "f@x.example"}}])
        report = sender.send(
            "c2",
            3,
            [{"name": "Ann", "fields": {"email": "ann@x.example"}}, {"name": "NoMail"}],
        )
    assert statuses(report)[0] in ("created", "updated")
    assert statuses(report)[1] == "in_doubt"
    error = report.results[1].error or ""
    assert "no record list endpoint" in error and "405" in error


def test_413_splits_the_chunk_and_fails_only_the_oversized_row(tmp_path: Path) -> None:
    huge = {"name": "Huge", "fields": {"stage": "won", "notes": "x" * (5 * 1024 * 1024 + 10)}}
    chunk = [deal("A"), huge, deal("B"), deal("C")]
    with loopback(tmp_path, []) as client:
        report = ChunkSender(client, "deals").send("c", 2, chunk)
        held = records(client, "deals")
    assert statuses(report) == ["created", "failed", "created", "created"]
    error = report.results[1].error or ""
    assert "HTTP 413" in error and "this row alone is larger than the service accepts" in error
    assert report.split == 2  # the chunk, then the half holding the large row
    assert names(held) == {"A": 1, "B": 1, "C": 1}

"""Settling under clocks that disagree, over a real socket: the sandbox's Date header and
record stamps skewed (``skew`` fault), answers lost after apply."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recordsync.send.sender import ChunkSender

from .support import loopback, records

LOST = "drop-after-apply:every=2:path=/batch"


def deal(name: str, amount: int = 1) -> dict[str, Any]:
    return {"name": name, "fields": {"stage": "won", "amount": amount}}


@pytest.mark.parametrize("skew", ["skew:date=+2s", "skew:date=-30s", "skew:stamps=-30s"])
def test_twins_are_held_in_doubt_never_resent(tmp_path: Path, skew: str) -> None:
    with loopback(tmp_path, [skew, LOST]) as client:
        sender = ChunkSender(client, "deals")
        sender.send("c1", 2, [deal("First")])  # answered: its record is the next mark
        report = sender.send("c2", 3, [deal("Twin"), deal("Twin"), deal("Solo", 2)])
        held = records(client, "deals")
    assert [r.status.value for r in report.results] == ["in_doubt", "in_doubt", "created"]
    assert "2 hold this row's values" in (report.results[0].error or "")
    assert Counter(r["name"] for r in held) == {"First": 1, "Twin": 2, "Solo": 1}


def test_a_mark_record_deleted_since_falls_back_to_the_steps_first_mark(tmp_path: Path) -> None:
    with loopback(tmp_path, ["skew:date=+30s", LOST]) as client:
        sender = ChunkSender(client, "deals")
        first = sender.send("c1", 2, [deal("First")])
        rid = first.results[0].record_id
        client.attempt("DELETE", client.object_path("deals"), json={"id": rid})
        report = sender.send("c2", 3, [deal("A"), deal("B", 2)])
        held = records(client, "deals")
    assert [r.status.value for r in report.results] == ["created", "created"]
    assert report.attempts == 1 and report.settled_by_reading == 2
    assert sorted(r["name"] for r in held) == ["A", "B"]

"""bench/plausible.py: a benchmark's baseline is checked before any verdict; the checks
themselves are plain arithmetic on what the bare loop and the server reported (no timing)."""

from __future__ import annotations

from typing import Any

from tests.bench.support import load


def timing(median_ms: float, requests: int = 1000) -> Any:
    plausible = load("plausible")
    return plausible.LoopTiming(requests, requests * median_ms / 1000, median_ms)


def test_a_server_without_tcp_nodelay_is_broken_whatever_the_times() -> None:
    broken = load("plausible").broken
    assert broken("noop", timing(1.6), nodelay=[1, 1]) is None
    problem = broken("noop", timing(1.6), nodelay=[1, 0])
    assert problem is not None and "TCP_NODELAY" in problem
    assert broken("noop", timing(1.6), nodelay=[]) is not None  # nothing to judge by
    assert "no request" in (broken("sandbox", timing(1.0, requests=0)) or "")


def test_a_slow_server_that_does_not_wait_is_broken() -> None:
    broken = load("plausible").broken
    assert broken("slow", timing(21.5), delay_ms=20, nodelay=[1]) is None
    assert broken("slow", timing(90.0), delay_ms=20, nodelay=[1]) is None  # load: longer
    missing = broken("slow", timing(1.5), delay_ms=20, nodelay=[1])
    assert missing is not None and "no delay" in missing


def test_below_its_floor_a_baseline_gives_no_verdict() -> None:
    below = load("plausible").below_floor
    assert below("noop", timing(1.6)) is None  # ~600 requests/s
    stalled = below("noop", timing(44.1))  # a stall, or a machine at load 15
    assert stalled is not None and "23 requests/s" in stalled and "floor of 150/s" in stalled
    assert below("sandbox", timing(5.0)) is None
    assert below("sandbox", timing(38.0)) is not None
    assert below("slow", timing(21.0), delay_ms=20) is None  # 48/s of 50
    assert below("slow", timing(64.0), delay_ms=20) is not None

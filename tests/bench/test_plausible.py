"""bench/plausible.py: a benchmark's baseline is checked before any verdict; the checks
themselves are plain arithmetic on what the bare loop measured (no timing here)."""

from __future__ import annotations

from tests.bench.support import load


def timing(median_ms: float, requests: int = 1000) -> object:
    plausible = load("plausible")
    return plausible.LoopTiming(requests, requests * median_ms / 1000, median_ms)


def test_a_stalled_no_op_server_is_implausible_a_loaded_one_is_not() -> None:
    check = load("plausible").check_bare
    assert check("noop", timing(1.6)) is None
    assert check("noop", timing(9.0)) is None  # load 6 on two cores
    problem = check("noop", timing(44.1))  # Nagle against a delayed ACK
    assert problem is not None and "44.1 ms" in problem and "TCP_NODELAY" in problem


def test_the_slow_server_must_apply_its_delay_and_add_no_stall() -> None:
    check = load("plausible").check_bare
    assert check("slow", timing(21.5), delay_ms=20) is None
    missing = check("slow", timing(1.5), delay_ms=20)
    assert missing is not None and "no delay applied" in missing
    stalled = check("slow", timing(64.0), delay_ms=20)
    assert stalled is not None and "stalls" in stalled


def test_the_sandbox_floor_and_an_empty_loop() -> None:
    check = load("plausible").check_bare
    assert check("sandbox", timing(38.0)) is None  # the sandbox at load 11
    assert check("sandbox", timing(250.0)) is not None
    assert "no request" in (check("noop", timing(1.0, requests=0)) or "")

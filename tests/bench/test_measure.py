"""bench/measure.py: the peak RSS, CPU and exit code are the child's own, whatever the size
of the process that runs the benchmark (a child's ru_maxrss includes the peak of the memory
it replaced at exec; the tiny launcher keeps that out)."""

from __future__ import annotations

import sys

from tests.bench.support import load

HELD_MB = 256


def test_the_peak_is_the_childs_not_the_benchmarks() -> None:
    measure = load("measure").measure
    held = bytearray(HELD_MB << 20)
    held[:: 1 << 12] = b"\x01" * len(range(0, len(held), 1 << 12))  # resident, every page
    small = measure([sys.executable, "-c", "pass"])
    grow = "b = bytearray(96 << 20); b[::4096] = b'x' * len(range(0, len(b), 4096))"
    big = measure([sys.executable, "-c", grow])
    failing = measure([sys.executable, "-c", "import sys; print('no', file=sys.stderr); exit(3)"])
    del held
    assert small.code == 0 and small.peak_mb < HELD_MB / 2, small
    assert big.code == 0 and 96 <= big.peak_mb < HELD_MB, big
    assert failing.code == 3 and failing.stderr.strip() == "no"
    assert small.wall > 0 and small.cpu >= 0

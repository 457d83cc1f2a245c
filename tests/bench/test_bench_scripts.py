"""The process benchmarks run end to end at a tiny size and print their target lines (no
timing is asserted: only that they ran, checked what arrived, and reported)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.bench.support import BENCH

import recordsync

SRC = str(Path(recordsync.__file__).resolve().parents[1])


def bench(script: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECORDSYNC_")}
    env["PYTHONPATH"] = SRC
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_bench_run_compares_every_server_checks_its_baseline_and_prints_each_target() -> None:
    args = ["--rows", "150", "--slow-rows", "120", "--pairs", "1", "--no-state-too"]
    out = bench("bench_run.py", *args, "--servers", "noop", "sandbox", "slow")
    assert "round 1 noop" in out and "round 1 sandbox" in out and "round 1 slow" in out
    for server in ("noop", "sandbox", "slow"):  # under its floor on a loaded machine: no verdict
        assert f"{server}: baseline (plausible.py): TCP_NODELAY on" in out
    assert "nostate" in out and "| 20 ms per answer (120 rows), share of the limit |" in out
    assert "target into slow: bare/recordsync >= 0.97x" in out
    assert "target peak RSS" in out


def test_split_floor_runs_the_floor_beside_the_real_run_and_checks_what_arrived() -> None:
    out = bench("split_floor.py", "--rows", "150", "--pairs", "1", "--servers", "noop")
    assert "round 1 noop" in out and "arrived exactly once: all 3" in out
    assert "baseline / recordsync wall" in out and "| no-op server (150 rows), wall |" in out


def test_bench_startup_prints_the_difference_and_the_target() -> None:
    out = bench("bench_startup.py", "--rows", "120", "--pairs", "1")
    assert "round 1: recordsync" in out
    assert "baseline (plausible.py): TCP_NODELAY on" in out
    assert "target start-up, 120-row run within 0.3 s of the bare loop" in out


def test_bench_nightly_checks_the_server_and_times_read_and_decide() -> None:
    out = bench("bench_nightly.py", "--rows", "300", "--decide-rows", "400")
    assert out.count(": True") == 8 and ": False" not in out
    assert "csv read+decide" in out and "parquet read+decide" in out
    assert "csv read+decide (400 rows, own snapshot)" in out
    assert "first / unchanged" in out

"""Benchmark: peak memory of a first run, by source size.

    python bench/bench_memory.py [--rows 100000 1000000]

For each size, a fresh child process writes bench_run.py's contacts CSV and pipeline, runs
``run_pipeline`` with the state store on into a fresh sandbox (its own process), and prints
its own peak RSS (VmHWM of the process that does the work, not this parent's) and the rows
the run reported, after checking what arrived (the sandbox's records read back: every source
row exactly once). Prints the ratio of the largest size's peak to the smallest's (target of
issue 14: <= 500 MB and flat).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(rows: int) -> None:
    sys.path.insert(0, str(HERE))
    from arrivals import check_sandbox, source_emails
    from project import KEY, make_project, sandbox, warm_imports

    from recordsync.secret import Secret
    from recordsync.send.pipeline import RunRequest, run_pipeline
    from recordsync.settings import Target

    with tempfile.TemporaryDirectory(prefix="recordsync-mem-") as tmp:
        root = Path(tmp)
        pipeline = make_project(root, rows)
        warm_imports()
        start = vm_hwm_mb()
        with sandbox(root / "sandbox.db", "process") as url:
            t = time.perf_counter()
            result = run_pipeline(
                RunRequest(pipeline, report_dir=root / "reports", state_db=root / "state.db"),
                target=Target(url, Secret(KEY), "bench", "bench"),
            )
            wall = time.perf_counter() - t
        peak = vm_hwm_mb()  # before the check below reads the records
        # what arrived, read back from the sandbox: every source row one record
        check_sandbox(root / "sandbox.db", source_emails(pipeline), f"{rows}-row run")
    read = result.summary["totals"]["rows_read"]
    print(f"{rows} {peak:.0f} {start:.0f} {wall:.1f} {read}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    peaks: list[float] = []
    for rows in args.rows:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(rows)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        peak, start, wall, read = float(out[1]), float(out[2]), float(out[3]), int(out[4])
        peaks.append(peak)
        print(
            f"{rows:>10,} rows: peak RSS {peak:,.0f} MB (after imports {start:,.0f} MB),"
            f" {wall:.1f} s, {read:,} rows read"
        )
    print(f"peak ratio {args.rows[-1]:,} / {args.rows[0]:,} rows: {peaks[-1] / peaks[0]:.2f}x")


if __name__ == "__main__":
    main()

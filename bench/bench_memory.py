"""Benchmark: peak memory of a first run, an unchanged re-run and a dry run, by source size.

    python bench/bench_memory.py [--rows 100000 1000000] [--modes first rerun dry]

For each size, a fresh directory gets the contacts CSV and pipeline of bench/project.py and
a sandbox (its own process, fresh). Then each mode runs in a fresh child process, which prints
its own peak RSS (VmHWM of the process that does the work, not this parent's) and the rows
the run reported; what arrived is read back from the sandbox (a first run: every source row
exactly once; a re-run and a dry run: nothing written). ``first`` runs ``run_pipeline`` with
the state store on; ``rerun`` runs it again on the same state and sandbox (every row
unchanged; runs ``first`` first if it was not asked for, unmeasured); ``dry`` is a dry run
with the state store off. Prints, per mode, the ratio of the largest size's peak to the
smallest's (target of issue 14: <= 500 MB and flat, the largest two sizes within 1.2x).
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
sys.path.insert(0, str(HERE))

from measure import vm_hwm_mb  # noqa: E402

MODES = ("first", "rerun", "dry")


def child(root: Path, mode: str, url: str) -> None:
    sys.path.insert(0, str(HERE))
    from project import KEY, warm_imports

    from recordsync.secret import Secret
    from recordsync.send.pipeline import RunRequest, run_pipeline
    from recordsync.settings import Target

    warm_imports()
    start = vm_hwm_mb()
    pipeline = root / "pipelines" / "bench.yaml"
    t = time.perf_counter()
    result = run_pipeline(
        RunRequest(
            pipeline,
            dry_run=mode == "dry",
            state=mode != "dry",
            report_dir=root / "reports",
            state_db=root / "state.db",
        ),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall = time.perf_counter() - t
    totals = result.summary["totals"]
    print(f"{vm_hwm_mb():.0f} {start:.0f} {wall:.1f} {totals['rows_read']}")


def run_child(root: Path, mode: str, url: str) -> tuple[float, float, float, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(root), mode, url],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return
    sys.path.insert(0, str(HERE))
    from arrivals import check_sandbox, sandbox_changes, source_emails
    from project import make_project, sandbox

    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    peaks: dict[str, list[float]] = {m: [] for m in args.modes}
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="recordsync-mem-") as tmp:
            root = Path(tmp)
            pipeline = make_project(root, rows)
            db = root / "sandbox.db"
            with sandbox(db, "process") as url:
                if "rerun" in args.modes and "first" not in args.modes:
                    run_child(root, "first", url)  # the state the re-run finds (unmeasured)
                for mode in (m for m in MODES if m in args.modes):
                    before = sandbox_changes(db)
                    peak, start, wall, read = run_child(root, mode, url)
                    # what arrived, read back from the sandbox (not the tool's summary)
                    if mode == "first":
                        check_sandbox(db, source_emails(pipeline), f"{rows}-row first run")
                    elif sandbox_changes(db) != before:
                        sys.exit(f"the {rows}-row {mode} run wrote to the sandbox")
                    peaks[mode].append(peak)
                    print(
                        f"{rows:>10,} rows, {mode:<5}: peak RSS {peak:,.0f} MB (after imports"
                        f" {start:,.0f} MB), {wall:.1f} s, {read:,} rows read",
                        flush=True,
                    )
    for mode, values in peaks.items():
        if len(values) > 1:
            print(
                f"{mode}: peak ratio {args.rows[-1]:,} / {args.rows[0]:,} rows:"
                f" {values[-1] / values[0]:.2f}x; {args.rows[-1]:,} / {args.rows[-2]:,} rows:"
                f" {values[-1] / values[-2]:.2f}x"
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

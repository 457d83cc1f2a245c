"""Benchmark: peak memory of a first run, an unchanged re-run and a dry run, by source size.

    python bench/bench_memory.py [--rows 100000 1000000] [--modes first rerun dry]
                                 [--server sandbox|noop] [--baseline-src DIR] [--light]

For each size, a fresh directory gets the contacts CSV and pipeline of bench/project.py and
a server (its own process, fresh): the sandbox, or ``--server noop`` (bench/noop_server.py:
answers every entry ``created`` with a fresh id and stores nothing, so a first run of millions
of rows takes minutes, not an hour; a re-run still finds the ledger and the snapshot). Then
each mode runs in a fresh child process, which prints its own peak RSS (VmHWM of the process
that does the work, not this parent's), its CPU seconds and the rows the run reported; what
arrived is read from the server (a first run: every source row exactly once, from the
sandbox's records or the no-op server's counts; a re-run and a dry run: nothing written).
``first`` runs ``run_pipeline`` with the state store on; ``rerun`` runs it again on the same
state (every row unchanged; runs ``first`` first if it was not asked for, unmeasured);
``dry`` is a dry run with the state store off. The child leaves out of its process what the
``recordsync`` command's entry leaves out (``recordsync.cli.startup``: pandas, which pyarrow
would import) and turns on its process-wide tweaks (``recordsync.tuning.enable``: Arrow's
memory pool, the trim after each batch), so its peak is what a ``recordsync run`` process
reaches.

``--baseline-src DIR``: every mode also runs with recordsync from DIR (e.g. the branch
point's ``src``), with its own server and state, interleaved with this tree's runs (baseline
first), and the ratios this / baseline are printed. ``--light``: the no-op server's first-run
check compares counts (entries = distinct identities = source rows) instead of every e-mail
(for 10M rows: no 10M-entry answer to build).

Prints, per mode and side, the ratio of the largest size's peak to the smallest's (target of
issue 14: <= 500 MB and flat, the largest two sizes within 1.2x).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import vm_hwm_mb  # noqa: E402

MODES = ("first", "rerun", "dry")


def child(root: Path, mode: str, url: str) -> None:
    try:  # what `recordsync`'s entry leaves out of its process (pandas: ~35 MB), as the CLI
        from recordsync.cli.startup import leave_out_unused
    except ImportError:  # a baseline tree from before it existed
        pass
    else:
        leave_out_unused()
    from recordsync import tuning

    tuning.enable()  # the command's process-wide tweaks (Arrow's pool, the trim), as the CLI
    sys.path.insert(0, str(HERE))
    from project import KEY, warm_imports

    from recordsync.core.secret import Secret
    from recordsync.run.pipeline import RunRequest, run_pipeline
    from recordsync.run.target import Target

    warm_imports()
    start = vm_hwm_mb()
    pipeline = root.parent / "pipelines" / "bench.yaml"
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
    ru = resource.getrusage(resource.RUSAGE_SELF)
    totals = result.summary["totals"]
    print(
        f"{vm_hwm_mb():.0f} {start:.0f} {wall:.1f} {totals['rows_read']}"
        f" {ru.ru_utime + ru.ru_stime:.1f}"
    )


def run_child(
    root: Path, mode: str, url: str, src: Path | None
) -> tuple[float, float, float, int, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(root), mode, url],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3]), float(out[4])


def changes(root: Path, side: str, urls: dict[str, str], noop: bool) -> object:
    """What the server holds (unchanged when nothing arrived)."""
    from arrivals import sandbox_changes
    from noop_server import counts

    if noop:
        return counts(urls[side])["entries"]
    return sandbox_changes(root / side / "sandbox.db")


def check_first(root: Path, side: str, url: str, rows: int, emails: set[str], noop: bool) -> None:
    """Every source row arrived exactly once (``emails`` empty: counts only, --light)."""
    from arrivals import check_noop, check_sandbox
    from noop_server import counts

    who = f"{rows}-row first run ({side})"
    if not noop:
        check_sandbox(root / side / "sandbox.db", emails, who)
    elif emails:
        check_noop(url, emails, who)
    else:
        got = counts(url)
        n = (got["entries"].get("contacts"), got["distinct"].get("contacts"))
        if n != (rows, rows) or set(got["entries"]) != {"contacts"}:
            sys.exit(f"{who}: the no-op server received {got}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--server", choices=("sandbox", "noop"), default="sandbox")
    parser.add_argument("--baseline-src", type=Path, help="also run recordsync from this tree")
    parser.add_argument("--light", action="store_true", help="count-only arrival check (noop)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return
    sys.path.insert(0, str(HERE))
    from arrivals import source_emails
    from noop_server import noop_server, write_meta
    from project import KEY, make_project, sandbox

    sides: dict[str, Path | None] = {"this": None}
    if args.baseline_src is not None:
        sides = {"baseline": args.baseline_src.resolve(), "this": None}
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    peaks: dict[tuple[str, str], list[float]] = {}
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="recordsync-mem-") as tmp, ExitStack() as stack:
            root = Path(tmp)
            pipeline = make_project(root, rows)
            emails = source_emails(pipeline) if not args.light else set()
            meta = write_meta(root / "meta.json") if args.server == "noop" else None
            urls: dict[str, str] = {}
            for side in sides:
                (root / side).mkdir()
                serving: AbstractContextManager[str] = (
                    noop_server(meta, KEY)
                    if meta is not None
                    else sandbox(root / side / "sandbox.db", "process")
                )
                urls[side] = stack.enter_context(serving)

            for side, src in sides.items():
                if "rerun" in args.modes and "first" not in args.modes:
                    run_child(root / side, "first", urls[side], src)  # unmeasured
            for mode in (m for m in MODES if m in args.modes):
                for side, src in sides.items():
                    before = changes(root, side, urls, meta is not None)
                    peak, start, wall, read, cpu = run_child(root / side, mode, urls[side], src)
                    if mode == "first":
                        check_first(root, side, urls[side], rows, emails, meta is not None)
                    elif changes(root, side, urls, meta is not None) != before:
                        sys.exit(f"the {rows}-row {mode} run ({side}) wrote to the server")
                    peaks.setdefault((mode, side), []).append(peak)
                    print(
                        f"{rows:>10,} rows, {mode:<5} {side:<8}: peak RSS {peak:,.0f} MB"
                        f" (after imports {start:,.0f} MB), {wall:.1f} s, CPU {cpu:.1f} s,"
                        f" {read:,} rows read, load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
                if len(sides) > 1:
                    base, this = peaks[(mode, "baseline")][-1], peaks[(mode, "this")][-1]
                    print(f"{'':>16}{mode} this / baseline: {this / base:.2f}x", flush=True)
    for (mode, side), values in peaks.items():
        if len(values) > 1:
            print(
                f"{mode} {side}: peak ratio {args.rows[-1]:,} / {args.rows[0]:,} rows:"
                f" {values[-1] / values[0]:.2f}x; {args.rows[-1]:,} / {args.rows[-2]:,} rows:"
                f" {values[-1] / values[-2]:.2f}x"
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

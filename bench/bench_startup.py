"""Benchmark: start-up, a ``recordsync run`` of a small pipeline against the bare loop.

    python bench/bench_startup.py [--rows 1000] [--pairs 7] [--baseline-src DIR]

bench_run.py's set-up and runs at a small size (default 1,000 contacts, ten chunks), into the
no-op server (bench/noop_server.py): process start to exit of ``python -m recordsync run``
(state store on, a fresh state database each time) and of ``bench/bare_loop.py`` posting the
same rows pre-encoded. Pairs interleaved, the order alternating; what arrived is checked after
every run (every source row exactly once), and after every bare run that the baseline is
checked (plausible.py: a broken one stops it, one under its floor withholds the verdict). Every
module is byte-compiled before the clock starts, as an installed package has it
(bench_run.Context.warm_up checks the bytecode is there). ``--baseline-src``: a third run per
round, recordsync from another source tree (e.g. the main branch's ``src``), for a before/after
in the same run.

Prints each round, the medians, the difference recordsync - bare (target: <= 0.3 s, quiet or
loaded: the load average is printed with every round), the load average, and the target line
with met / missed. For where the time goes: ``python -X importtime -m recordsync run ...``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_run import REPO, BaselineError, Context, load, one_run, verdict
from measure import Measured

TARGET = 0.3  # seconds over the bare loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--src", type=Path, default=REPO / "src", help="recordsync source")
    parser.add_argument("--baseline-src", type=Path, help="also run recordsync from this tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recordsync-startup-") as tmp:
        ctx = Context(Path(tmp), args.rows, args.src.resolve(), no_state=False)
        base = args.baseline_src.resolve() if args.baseline_src else None
        sides = ("recordsync", "bare") + (("baseline",) if base else ())
        try:
            ctx.warm_up(["noop"], sides, base)
        except BaselineError as exc:
            print(str(exc), flush=True)
            sys.exit(2)
        print(f"{args.rows:,} contacts into the no-op server, {args.pairs} rounds; load {load()}")
        runs: dict[str, list[Measured]] = {"recordsync": [], "bare": [], "baseline": []}
        for n in range(args.pairs):
            for side in sides if n % 2 == 0 else sides[::-1]:
                try:
                    if side == "baseline":
                        runs[side].append(one_run("recordsync", "noop", str(n), ctx, src=base))
                    else:
                        runs[side].append(one_run(side, "noop", str(n), ctx))
                except BaselineError as exc:
                    print(str(exc), flush=True)
                    sys.exit(2)
            line = " | ".join(
                f"{side} {m.wall:.3f} s ({m.cpu:.2f} s CPU, {m.peak_mb:.0f} MB)"
                for side in ("recordsync", "bare", "baseline")
                if runs[side] and (m := runs[side][-1])
            )
            print(f"round {n + 1}: {line} | load {load()}", flush=True)
        med = {side: statistics.median(m.wall for m in ms) for side, ms in runs.items() if ms}
        cpu = {side: statistics.median(m.cpu for m in ms) for side, ms in runs.items() if ms}
        gap = med["recordsync"] - med["bare"]
        loops = ctx.loops["noop"][-args.pairs :]
        print(
            "baseline (plausible.py): TCP_NODELAY on, the bare loop's median round trip"
            f" {statistics.median(t.median_ms for t in loops):.1f} ms"
            + (f"; under its floor in {len(low)} rounds" if (low := ctx.low.get("noop")) else "")
        )
        print(
            f"medians: recordsync {med['recordsync']:.3f} s ({cpu['recordsync']:.2f} s CPU),"
            f" bare {med['bare']:.3f} s ({cpu['bare']:.2f} s CPU)"
            + (f", baseline {med['baseline']:.3f} s ({cpu['baseline']:.2f} s CPU)" if base else "")
            + f"; load at the end {load()}"
        )
        if base:
            print(
                f"recordsync - baseline ({base}): {med['recordsync'] - med['baseline']:+.3f} s,"
                f" {cpu['recordsync'] - cpu['baseline']:+.3f} s CPU"
            )
        low = ctx.low.get("noop", [])
        judged = (
            f"no verdict (baseline under its floor: {low[0]})" if low else verdict(gap <= TARGET)
        )
        print(
            f"target start-up, {args.rows:,}-row run within {TARGET} s of the bare loop:"
            f" {gap:+.3f} s ({cpu['recordsync'] - cpu['bare']:+.3f} s CPU) {judged}"
        )


if __name__ == "__main__":
    main()

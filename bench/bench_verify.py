"""What the read-back verification (``verify:``) adds to a nightly run against the sandbox.

Runs the bench project's contacts pipeline (``project.py``) through ``run_pipeline`` in this
process, into a sandbox in its own process over loopback, with the read-back on (the
default: ``verify: {sample: 10}``, or ``--sample``) and off (``--no-verify``), in pairs
whose order alternates:

    first run        a fresh sandbox and state store per run: every row created
    unchanged re-run the same sandbox and state: every row found unchanged from its digest

Prints each pair's times, the median ratio (on / off) per kind of run, the requests the
read-back made, the load average, and whether the read-back stays under 5% of the run.
Each run's records read back must all hold what was sent (no mismatch), or it stops.

    python bench/bench_verify.py [--rows 100000] [--pairs 3] [--sample 10]
                                 [--kinds first,rerun,observer]

``observer`` times the sampler alone on a first run's path (what the read-back costs per
chunk while rows are sent), in this process: a first run's wall time into a loaded sandbox
varies too much for a few pairs to show a cost that small.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from project import KEY, make_project, sandbox, warm_imports

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.core.secret import Secret
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.target import Target
from recordsync.run.written import WrittenRecords

TARGET = 0.05


def run(root: Path, pipeline: Path, url: str, verify: bool, sample: int) -> tuple[float, Any]:
    if verify and sample != 10:
        text = pipeline.read_text(encoding="utf-8")
        if "verify:" not in text:
            pipeline.write_text(text + f"verify: {{sample: {sample}}}\n", encoding="utf-8")
    started = time.perf_counter()
    reports, state = root / "reports", root / "state.db"
    result = run_pipeline(
        RunRequest(pipeline, report_dir=reports, state_db=state, verify=verify),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall = time.perf_counter() - started
    assert result.error is None and result.summary["accounting_ok"], result.summary
    checked = result.summary["verify"]
    if verify:
        assert checked["enabled"] and checked["mismatched_records"] == 0, checked
        assert checked["unreadable"] == 0, checked
    return wall, result


SHARES: dict[str, list[float]] = {}
"""Per kind of run: the read-back's own time (summary.json verify.seconds) / the run's wall
time, for each run with the read-back on (less sensitive to the machine's load than the
ratio of two runs)."""


def first_runs(base: Path, rows: int, pairs: int, sample: int) -> list[tuple[float, float, int]]:
    out = []
    for i in range(pairs):
        times: dict[bool, float] = {}
        requests = 0
        for verify in (True, False) if i % 2 == 0 else (False, True):
            root = Path(tempfile.mkdtemp(dir=base))
            pipeline = make_project(root, rows)
            with sandbox(root / "sandbox.db", "process") as url:
                times[verify], result = run(root, pipeline, url, verify, sample)
            if verify:
                requests = result.summary["verify"]["requests"]
                share = result.summary["verify"]["seconds"] / times[verify]
                SHARES.setdefault("first run", []).append(share)
            assert result.summary["totals"]["created"] > 0
        out.append((times[True], times[False], requests))
        print(f"  first run, pair {i + 1}: on {times[True]:.2f} s, off {times[False]:.2f} s")
    return out


def reruns(base: Path, rows: int, pairs: int, sample: int) -> list[tuple[float, float, int]]:
    root = Path(tempfile.mkdtemp(dir=base))
    pipeline = make_project(root, rows)
    out = []
    with sandbox(root / "sandbox.db", "process") as url:
        run(root, pipeline, url, False, sample)  # the first run: not measured
        for i in range(pairs):
            times: dict[bool, float] = {}
            requests = 0
            for verify in (True, False) if i % 2 == 0 else (False, True):
                times[verify], result = run(root, pipeline, url, verify, sample)
                assert result.summary["totals"]["rows_unchanged"] > 0
                if verify:
                    requests = result.summary["verify"]["requests"]
                    share = result.summary["verify"]["seconds"] / times[verify]
                    SHARES.setdefault("unchanged re-run", []).append(share)
            out.append((times[True], times[False], requests))
            print(
                f"  unchanged re-run, pair {i + 1}: on {times[True]:.3f} s, "
                f"off {times[False]:.3f} s"
            )
    return out


def observer(rows: int, sample: int) -> None:
    """The sampler's own cost on a first run's path (every chunk answered, nothing else), in
    this process: with the read-back on against off, alternating, best of 5."""
    chunks = []
    for c in range(rows // 100):
        sent = [
            PreparedRow(SourceRow("f.csv", c * 100 + i, {}), RowStatus.VALID, {"name": "x"})
            for i in range(100)
        ]
        chunks.append((sent, [EntryResult(RowStatus.CREATED, c * 100 + i) for i in range(100)]))
    best = {True: float("inf"), False: float("inf")}
    for _ in range(5):
        for on in (True, False):
            watch = WrittenRecords({"s": sample} if on else {})
            started = time.perf_counter()
            for sent, results in chunks:
                watch.settled("s", list(sent), results, None)
            best[on] = min(best[on], time.perf_counter() - started)
    print(
        f"sampler on a first run's path, {rows} rows: on {best[True] * 1000:.1f} ms, "
        f"off {best[False] * 1000:.1f} ms (best of 5)"
    )


def report(kind: str, pairs: list[tuple[float, float, int]]) -> None:
    ratios = [on / off for on, off, _ in pairs]
    ratio = statistics.median(ratios)
    added = statistics.median(on - off for on, off, _ in pairs)
    met = "met" if ratio - 1 < TARGET else "missed"
    share = statistics.median(SHARES.get(kind, [0.0]))
    print(
        f"{kind}: on / off median {ratio:.3f}x (pairs {', '.join(f'{r:.3f}' for r in ratios)}), "
        f"{added:+.3f} s, {pairs[0][2]} read-back requests; target < +5%: {met}; the "
        f"read-back's own time: median {share:.2%} of the run's"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--sample", type=int, default=10)
    parser.add_argument("--kinds", default="first,rerun,observer")
    args = parser.parse_args()
    warm_imports()
    print(f"rows {args.rows}, pairs {args.pairs}, sample {args.sample} a step")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if "observer" in args.kinds:
        observer(args.rows, args.sample)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        results = {}
        if "first" in args.kinds:
            results["first run"] = first_runs(base, args.rows, args.pairs, args.sample)
        if "rerun" in args.kinds:
            results["unchanged re-run"] = reruns(base, args.rows, args.pairs, args.sample)
    for kind, pairs in results.items():
        report(kind, pairs)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Benchmark: whole ``recordsync run`` processes against a bare httpx loop, over loopback.

    python bench/bench_run.py [--rows 100000] [--pairs 5] [--servers noop sandbox] [--no-state]
                              [--baseline-src TREE/src] [--floor]

Set-up (not timed): ``--rows`` generated contacts as a CSV in the sample export's format, a
pipeline with the sample contacts mapping, and the same rows mapped and validated once and
written as pre-encoded request bodies (chunks of 100) for the bare loop.

Each pair runs, one after the other (the order alternating from pair to pair), as processes
of their own, each into a fresh server of the kind being measured:

- recordsync: ``python -m recordsync run PIPELINE --base-url URL --quiet`` with the state store
  on (``--no-state``: off), a fresh state database each time: read, map, validate, chunk,
  send, reconcile, report, as a scheduler runs it;
- bare loop: ``python bench/bare_loop.py``, which posts the pre-encoded bodies from one
  keep-alive ``httpx.Client`` and checks the status codes.

Servers: ``noop`` (bench/noop_server.py: checks and answers batches, stores nothing) and
``sandbox`` (the local sandbox, its own process). Both sides pay their process start-up.
Timings and peak RSS are those of the child (bench/measure.py: a tiny launcher, ``wait4``).

After every run, of either side, the benchmark checks what ARRIVED, not what the tool says:
the no-op server's counts (every source e-mail exactly once, nothing else), or the sandbox's
records read back from its database (every source e-mail one live record); a mismatch stops
the benchmark. Prints each pair, the medians, the ratio bare time / recordsync time (issue
14: >= 0.8x into the no-op server, >= 0.9x into the sandbox), peak RSS (<= 200 MB at 100k)
and the load average, and one line per target with met / missed.

Optional sides, run in every pair too (the order reversed from pair to pair): ``--baseline-src``
runs recordsync from another source tree (``git archive REV src | tar -x -C DIR``), for a
before / after in the same run; ``--floor`` runs bench/floor_loop.py, the least a client can
do for the same contract in one CPython process (its payloads are first checked equal to
recordsync's), to show how far the targets are from what such a client can reach.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arrivals import ArrivalError, check_noop, check_sandbox, source_emails
from measure import Measured, measure
from noop_server import noop_server, write_meta
from project import HERE, KEY, REPO, make_project, precompute, sandbox


def write_bodies(pipeline: Path, path: Path) -> int:
    """The bare loop's request bodies, one a line; returns the number of entries."""
    chunks = precompute(pipeline)
    with open(path, "wb") as f:
        for chunk in chunks:
            f.write(orjson.dumps({"objects": chunk}) + b"\n")
    return sum(len(c) for c in chunks)


def one_run(side: str, server: str, tag: str, ctx: Context, src: Path | None = None) -> Measured:
    """One process of ``side`` into a fresh ``server``; checks what arrived. ``src``: run
    recordsync from that source tree instead of ``ctx.src`` (a baseline in the same run)."""
    tag = f"{side}-{tag}" if src is None else f"{side}-baseline-{tag}"
    db = ctx.root / f"{server}-{tag}.db"
    serving: AbstractContextManager[str] = (
        noop_server(ctx.meta, KEY) if server == "noop" else sandbox(db, "process")
    )
    env = dict(os.environ, PYTHONPATH=str(src or ctx.src), RECORDSYNC_API_KEY=KEY)
    for name in ("RECORDSYNC_BASE_URL", "RECORDSYNC_PROFILE", "RECORDSYNC_PROFILES"):
        env.pop(name, None)
    # bytecode cached as an installed package has it (see Context.warm_up), outside the trees
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ctx.pycache)
    reports = ctx.root / f"reports-{server}-{tag}"
    with serving as url:
        if side == "recordsync":
            cmd = [sys.executable, "-m", "recordsync", "run", str(ctx.pipeline)]
            cmd += ["--base-url", url, "--quiet", "--report-dir", str(reports)]
            cmd += ["--state-db", str(ctx.root / f"state-{server}-{tag}.db")]
            cmd += ["--no-state"] if ctx.no_state else []
        elif side == "floor":
            reports.mkdir()
            state = ctx.root / f"state-{server}-{tag}.db"
            cmd = [sys.executable, str(HERE / "floor_loop.py"), url, KEY, str(ctx.csv)]
            cmd += [str(state), str(reports / "results.csv")]
        else:
            cmd = [sys.executable, str(HERE / "bare_loop.py"), url, KEY, str(ctx.bodies)]
        result = measure(cmd, env)
        for leftover in ctx.root.glob(f"state-{server}-{tag}.db*"):
            leftover.unlink()
        if result.code != 0:
            tail = result.stderr[-2000:]
            raise ArrivalError(f"{side} into {server} exited {result.code}: {tail}")
        if server == "noop":
            check_noop(url, ctx.emails, f"{side} run {tag}")
    if server == "sandbox":
        check_sandbox(db, ctx.emails, f"{side} run {tag}")
    shutil.rmtree(reports, ignore_errors=True)
    return result


class Context:
    def __init__(
        self, root: Path, rows: int, src: Path, no_state: bool, pycache: Path | None = None
    ) -> None:
        self.root, self.src, self.no_state = root, src, no_state
        self.pycache = pycache or root / "pycache"
        self.pipeline = make_project(root, rows)
        self.meta = write_meta(root / "meta.json")
        self.bodies = root / "bodies.jsonl"
        entries = write_bodies(self.pipeline, self.bodies)
        self.emails = source_emails(self.pipeline)
        assert entries == len(self.emails) == rows, (entries, len(self.emails), rows)
        self.csv = self.pipeline.parent.parent / "data" / "contacts.csv"

    def check_floor(self) -> None:
        """The floor (bench/floor_loop.py) must send exactly the objects recordsync sends."""
        dump = self.root / "floor.jsonl"
        with noop_server(self.meta, KEY) as url:
            cmd = [sys.executable, str(HERE / "floor_loop.py"), "--dump", str(dump), url, KEY]
            subprocess.run([*cmd, str(self.csv)], check=True)
        with open(self.bodies, "rb") as f:
            ours = [entry for line in f for entry in orjson.loads(line)["objects"]]
        with open(dump, "rb") as f:
            floor = [orjson.loads(line) for line in f]
        if ours != floor:
            raise ArrivalError("the floor's payloads differ from recordsync's: fix floor_loop.py")

    def warm_up(
        self, servers: list[str], baseline: Path | None = None, floor: bool = False
    ) -> None:
        """One untimed run of each side into each server (200 rows): every module a run
        imports gets its bytecode cached (the children run with ``PYTHONPYCACHEPREFIX`` in the
        temporary folder), as an installed package has; without it an environment with
        ``PYTHONDONTWRITEBYTECODE`` set compiles recordsync's modules in every run (0.1-0.2 s)
        while the bare loop imports only installed, compiled packages."""
        (self.root / "warm-up").mkdir()
        small = Context(self.root / "warm-up", 200, self.src, self.no_state, self.pycache)
        for server in servers:
            one_run("recordsync", server, "warm-up", small)
            one_run("bare", server, "warm-up", small)
            if floor:
                one_run("floor", server, "warm-up", small)
            if baseline is not None:
                one_run("recordsync", server, "warm-up", small, src=baseline)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs per server")
    parser.add_argument(
        "--servers", nargs="+", choices=("noop", "sandbox"), default=["noop", "sandbox"]
    )
    parser.add_argument("--no-state", action="store_true", help="recordsync with --no-state")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run bench/floor_loop.py in every pair (a single-process floor)",
    )
    parser.add_argument(
        "--src", type=Path, default=REPO / "src", help="recordsync source the runs use (a baseline)"
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also run recordsync from this source tree in every pair (before / after)",
    )
    args = parser.parse_args()
    targets = {"noop": 0.8, "sandbox": 0.9}
    baseline = args.baseline_src.resolve() if args.baseline_src else None
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-") as tmp:
        ctx = Context(Path(tmp), args.rows, args.src.resolve(), args.no_state)
        if args.floor:
            ctx.check_floor()
        ctx.warm_up(args.servers, baseline, floor=args.floor)
        print(
            f"{args.rows:,} contacts, {args.pairs} pairs per server, recordsync from {ctx.src}"
            f"{f' (baseline {baseline})' if baseline else ''}, state store"
            f" {'off' if args.no_state else 'on'}; load average {load()}",
            flush=True,
        )
        extras = ["baseline"] * (baseline is not None) + ["floor"] * args.floor
        sides = ("recordsync", "bare", *extras)
        runs: dict[str, dict[str, list[Measured]]] = {
            s: {side: [] for side in sides} for s in args.servers
        }
        for n in range(args.pairs):
            for server in args.servers:
                for side in sides if n % 2 == 0 else sides[::-1]:
                    if side == "baseline":
                        run = one_run("recordsync", server, f"{n}", ctx, src=baseline)
                    else:
                        run = one_run(side, server, f"{n}", ctx)
                    runs[server][side].append(run)
                print_pair(n, server, {side: runs[server][side][-1] for side in sides})
        print(f"load average at the end: {load()}")
        peaks: list[float] = []
        for server in args.servers:
            peaks += [m.peak_mb for m in runs[server]["recordsync"]]
            summarise(server, runs[server])
        for server in args.servers:
            ratio = statistics.median(ratios(runs[server], "recordsync"))
            print(
                f"target into {server}: bare/recordsync >= {targets[server]}x:"
                f" {ratio:.2f}x {verdict(ratio >= targets[server])}"
            )
        print(
            f"target peak RSS of a {args.rows:,}-row run <= 200 MB (issue 14, at 100k):"
            f" {max(peaks):.0f} MB (largest of {len(peaks)}) {verdict(max(peaks) <= 200)}"
        )


def ratios(runs: dict[str, list[Measured]], side: str) -> list[float]:
    """bare / ``side`` wall time, pair by pair."""
    return [b.wall / s.wall for b, s in zip(runs["bare"], runs[side], strict=True)]


def print_pair(n: int, server: str, pair: dict[str, Measured]) -> None:
    bare = pair["bare"]
    print(
        f"pair {n + 1} {server:7}: bare {bare.wall:6.2f} s ({bare.cpu:5.1f} s CPU, peak"
        f" {bare.peak_mb:4.0f} MB) | arrived exactly once: all {len(pair)} | load {load()}",
        flush=True,
    )
    for side, m in pair.items():
        if side != "bare":
            print(
                f"    {side:10} {m.wall:6.2f} s ({m.cpu:5.1f} s CPU, peak {m.peak_mb:4.0f} MB)"
                f" | bare/{side} {bare.wall / m.wall:.2f}x",
                flush=True,
            )
    if "baseline" in pair:
        speedup = pair["baseline"].wall / pair["recordsync"].wall
        print(f"    baseline / recordsync wall {speedup:.3f}x", flush=True)


def summarise(server: str, runs: dict[str, list[Measured]]) -> None:
    bare_med = statistics.median(m.wall for m in runs["bare"])
    print(f"{server}: bare median {bare_med:.2f} s, peak RSS {peak(runs['bare'])} MB")
    for side, measured in runs.items():
        if side == "bare":
            continue
        r = ratios(runs, side)
        med = statistics.median(m.wall for m in measured)
        print(
            f"{server}: {side} median {med:.2f} s; bare/{side} median of pairs"
            f" {statistics.median(r):.2f}x (range {min(r):.2f}-{max(r):.2f}x), of the medians"
            f" {bare_med / med:.2f}x; peak RSS {peak(measured)} MB"
        )
    if "baseline" in runs:
        sp = [b.wall / r.wall for b, r in zip(runs["baseline"], runs["recordsync"], strict=True)]
        print(
            f"{server}: baseline / recordsync wall, median of pairs {statistics.median(sp):.3f}x"
            f" (range {min(sp):.3f}-{max(sp):.3f}x; above 1: recordsync faster)"
        )


def peak(measured: list[Measured]) -> str:
    return f"{statistics.median(m.peak_mb for m in measured):.0f}"


if __name__ == "__main__":
    main()

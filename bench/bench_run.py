"""Benchmark: whole ``recordsync run`` processes against a bare httpx loop, over loopback.

    python bench/bench_run.py [--rows 100000] [--pairs 5] [--servers noop sandbox] [--no-state]

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
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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
        else:
            cmd = [sys.executable, str(HERE / "bare_loop.py"), url, KEY, str(ctx.bodies)]
        result = measure(cmd, env)
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

    def warm_up(self, servers: list[str], baseline: Path | None = None) -> None:
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
        "--src", type=Path, default=REPO / "src", help="recordsync source the runs use (a baseline)"
    )
    args = parser.parse_args()
    targets = {"noop": 0.8, "sandbox": 0.9}
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-") as tmp:
        ctx = Context(Path(tmp), args.rows, args.src.resolve(), args.no_state)
        ctx.warm_up(args.servers)
        print(
            f"{args.rows:,} contacts, {args.pairs} pairs per server, recordsync from {ctx.src},"
            f" state store {'off' if args.no_state else 'on'}; load average {load()}",
            flush=True,
        )
        runs: dict[str, dict[str, list[Measured]]] = {
            s: {"recordsync": [], "bare": []} for s in args.servers
        }
        ratios: dict[str, list[float]] = {s: [] for s in args.servers}
        for n in range(args.pairs):
            for server in args.servers:
                order = ("recordsync", "bare") if n % 2 == 0 else ("bare", "recordsync")
                for side in order:
                    runs[server][side].append(one_run(side, server, f"{n}", ctx))
                rs, bare = runs[server]["recordsync"][-1], runs[server]["bare"][-1]
                ratios[server].append(bare.wall / rs.wall)
                print(
                    f"pair {n + 1} {server:7}: recordsync {rs.wall:6.2f} s ({rs.cpu:5.1f} s CPU,"
                    f" peak {rs.peak_mb:4.0f} MB) | bare {bare.wall:6.2f} s ({bare.cpu:5.1f} s CPU,"
                    f" peak {bare.peak_mb:4.0f} MB) | bare/recordsync {ratios[server][-1]:.2f}x"
                    f" | arrived exactly once: both | load {load()}",
                    flush=True,
                )
        print(f"load average at the end: {load()}")
        peaks: list[float] = []
        for server in args.servers:
            rs_med = statistics.median(m.wall for m in runs[server]["recordsync"])
            bare_med = statistics.median(m.wall for m in runs[server]["bare"])
            ratio = statistics.median(ratios[server])
            peaks += [m.peak_mb for m in runs[server]["recordsync"]]
            print(
                f"{server}: medians recordsync {rs_med:.2f} s, bare {bare_med:.2f} s;"
                f" ratio bare/recordsync median of pairs {ratio:.2f}x"
                f" (range {min(ratios[server]):.2f}-{max(ratios[server]):.2f}x),"
                f" of the medians {bare_med / rs_med:.2f}x; peak RSS recordsync"
                f" {statistics.median(m.peak_mb for m in runs[server]['recordsync']):.0f} MB,"
                f" bare {statistics.median(m.peak_mb for m in runs[server]['bare']):.0f} MB"
            )
        for server in args.servers:
            ratio = statistics.median(ratios[server])
            print(
                f"target into {server}: bare/recordsync >= {targets[server]}x:"
                f" {ratio:.2f}x {verdict(ratio >= targets[server])}"
            )
        print(
            f"target peak RSS of a {args.rows:,}-row run <= 200 MB (issue 14, at 100k):"
            f" {max(peaks):.0f} MB (largest of {len(peaks)}) {verdict(max(peaks) <= 200)}"
        )


if __name__ == "__main__":
    main()

"""Benchmark: whole ``recordsync run`` processes against a bare httpx loop and the peers.

    python bench/bench_run.py [--rows 100000] [--pairs 5] [--servers noop sandbox slow]
                              [--peers] [--no-state-too] [--no-state] [--delay-ms 20]
                              [--slow-rows 20000] [--baseline-src TREE/src] [--floor]

Set-up (not timed): ``--rows`` generated contacts as a CSV in the sample export's format, a
pipeline with the sample contacts mapping, and the same rows mapped and validated once and
written as pre-encoded request bodies (chunks of 100) for the bare loop.

Each round runs every side, one after the other (the order reversed from round to round), as
processes of their own, each into a fresh server of the kind being measured:

- recordsync: ``python -m recordsync run PIPELINE --base-url URL --quiet`` with the state store
  on (``--no-state``: off), a fresh state database each time: read, map, validate, chunk,
  send, reconcile, report, as a scheduler runs it; ``--no-state-too`` adds a side with
  ``--no-state`` (``nostate``);
- bare loop: ``python bench/bare_loop.py``, which posts the pre-encoded bodies from one
  keep-alive ``httpx.Client`` and checks the status codes;
- ``--peers``: drt-core (``drt-tuned``, ``drt-natural``) and dlt (``dlt``) on the same CSV, in
  their own virtual environment under the cache folder, installed on first use (peers.py);
- ``--baseline-src``: recordsync from another source tree (``git archive REV src | tar -x -C
  DIR``), for a before / after in the same run; ``--floor``: bench/floor_loop.py, the least a
  client can do for the same contract in one CPython process (its payloads are first checked
  equal to recordsync's).

Servers: ``noop`` (bench/noop_server.py: checks and answers batches, stores nothing),
``sandbox`` (the local sandbox, its own process) and ``slow`` (the no-op server answering each
batch ``--delay-ms`` after it arrived, with ``--slow-rows`` contacts). Every side pays its
process start-up; every module is byte-compiled first, as an installed package has it
(``Context.warm_up``). Timings and peak RSS are those of the child (bench/measure.py).

After every run the benchmark checks what ARRIVED, not what the tool says: the no-op server's
counts (every source e-mail exactly once, nothing else), or the sandbox's records read back
from its database (every source e-mail one live record); a mismatch stops the benchmark. After
every bare run it checks the baseline (plausible.py): a broken one (the no-op server's
connections without TCP_NODELAY, a slow server that does not wait) stops the benchmark; one
under its floor of requests per second (an overloaded machine) withholds the verdicts. Prints
each round, the medians, a table of medians (wall, client CPU, peak RSS; for ``slow`` the share
of the limit, requests x delay / wall), the load average, and one line per target with met /
MISSED: recordsync (state on) ahead of every peer run, by median wall time, in every server,
and its client CPU per row (whole process, start-up included) at most drt tuned's into
``noop``; into ``slow`` at least 0.97x the bare loop's speed; peak RSS <= 200 MB at 100k rows.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arrivals import ArrivalError, check_noop, check_sandbox, source_emails
from measure import Measured, measure
from noop_server import counts, noop_server, timeline, write_meta
from peers import PEERS, peer_command, peer_env, peer_python
from plausible import LoopTiming, below_floor, broken
from project import HERE, KEY, REPO, make_project, precompute, sandbox
from timeline import Split, line, split

SETTINGS = {"noop": "no-op server", "sandbox": "the sandbox", "slow": "{delay} ms per answer"}


def write_bodies(pipeline: Path, path: Path, modelled: Path | None = None) -> int:
    """The bare loop's request bodies, one a line; returns the number of entries.
    ``modelled``: also the same objects as a table for the peers (peers.py, ``modelled``)."""
    chunks = precompute(pipeline)
    with open(path, "wb") as f:
        for chunk in chunks:
            f.write(orjson.dumps({"objects": chunk}) + b"\n")
    if modelled is not None:
        with open(modelled, "w", newline="", encoding="utf-8") as f:
            table = csv.writer(f)
            table.writerow(["name", "email", "fields"])
            for chunk in chunks:
                for o in chunk:
                    assert o["match_by"] == "email", o
                    fields = orjson.dumps(o["fields"]).decode()
                    table.writerow([o["name"], o["match_value"], fields])
    return sum(len(c) for c in chunks)


class BaselineError(RuntimeError):
    """The baseline of a benchmark is implausible: no verdict can be drawn from it."""


def one_run(side: str, server: str, tag: str, ctx: Context, src: Path | None = None) -> Measured:
    """One process of ``side`` into a fresh ``server``; checks what arrived (and, for the bare
    loop, that its figures are plausible). ``src``: run recordsync from that source tree
    instead of ``ctx.src`` (a baseline in the same run)."""
    tag = f"{side}-{tag}" if src is None else f"{side}-baseline-{tag}"
    db = ctx.root / f"{server}-{tag}.db"
    serving: AbstractContextManager[str] = (
        sandbox(db, "process")
        if server == "sandbox"
        else noop_server(ctx.meta, KEY, ctx.delay_ms if server == "slow" else 0.0)
    )
    env = dict(os.environ, PYTHONPATH=str(src or ctx.src), RECORDSYNC_API_KEY=KEY)
    for name in ("RECORDSYNC_BASE_URL", "RECORDSYNC_PROFILE", "RECORDSYNC_PROFILES"):
        env.pop(name, None)
    # bytecode cached as an installed package has it (see Context.warm_up), outside the trees
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ctx.pycache)
    reports = ctx.root / f"reports-{server}-{tag}"
    timing = ctx.root / f"timing-{server}-{tag}.json"
    cwd: Path | None = None
    with serving as url:
        if side in ("recordsync", "nostate"):
            cmd = [sys.executable, "-m", "recordsync", "run", str(ctx.pipeline)]
            cmd += ["--base-url", url, "--quiet", "--report-dir", str(reports)]
            cmd += ["--state-db", str(ctx.root / f"state-{server}-{tag}.db")]
            cmd += ["--no-state"] if ctx.no_state or side == "nostate" else []
        elif side == "floor":
            reports.mkdir()
            state = ctx.root / f"state-{server}-{tag}.db"
            cmd = [sys.executable, str(HERE / "floor_loop.py"), url, KEY, str(ctx.csv)]
            cmd += [str(state), str(reports / "results.csv")]
        elif side in PEERS:
            table = ctx.modelled if ctx.peers_input == "modelled" else ctx.csv
            cmd, cwd, home = peer_command(side, reports, table, url, KEY, ctx.peers_input)
            env = peer_env(env, home)
        else:
            cmd = [sys.executable, str(HERE / "bare_loop.py"), url, KEY, str(ctx.bodies)]
            cmd.append(str(timing))
        result = measure(cmd, env, cwd)
        for leftover in ctx.root.glob(f"state-{server}-{tag}.db*"):
            leftover.unlink()
        if result.code != 0:
            tail = result.stderr[-2000:]
            raise ArrivalError(f"{side} into {server} exited {result.code}: {tail}")
        nodelay: list[int] | None = None
        if server != "sandbox":
            check_noop(url, ctx.emails, f"{side} run {tag}")
            nodelay = counts(url).get("nodelay")
            label = side if src is None else "baseline"
            where = split(timeline(url), result.started, result.ended)
            ctx.splits.setdefault(server, {}).setdefault(label, []).append(where)
    if server == "sandbox":
        check_sandbox(db, ctx.emails, f"{side} run {tag}")
    if side == "bare":
        loop = LoopTiming(**json.loads(timing.read_text(encoding="utf-8")))
        ctx.loops.setdefault(server, []).append(loop)
        problem = broken(server, loop, ctx.delay_ms, nodelay)
        if problem is not None:
            raise BaselineError(f"baseline broken, no verdict: {problem}")
        low = below_floor(server, loop, ctx.delay_ms)
        if low is not None and tag != "bare-warm-up":
            ctx.low.setdefault(server, []).append(low)
    shutil.rmtree(reports, ignore_errors=True)
    return result


class Context:
    def __init__(
        self,
        root: Path,
        rows: int,
        src: Path,
        no_state: bool,
        pycache: Path | None = None,
        delay_ms: float = 20.0,
        peers_input: str = "modelled",
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.src, self.no_state, self.delay_ms = root, src, no_state, delay_ms
        self.rows = rows
        self.pycache = pycache or root / "pycache"
        self.pipeline = make_project(root, rows)
        self.meta = write_meta(root / "meta.json")
        self.bodies = root / "bodies.jsonl"
        self.modelled = root / "modelled.csv"
        self.peers_input = peers_input
        entries = write_bodies(self.pipeline, self.bodies, self.modelled)
        self.emails = source_emails(self.pipeline)
        assert entries == len(self.emails) == rows, (entries, len(self.emails), rows)
        self.csv = self.pipeline.parent.parent / "data" / "contacts.csv"
        self.loops: dict[str, list[LoopTiming]] = {}
        self.low: dict[str, list[str]] = {}
        """Per server, each bare run under its floor (plausible.below_floor)."""
        self.splits: dict[str, dict[str, list[Split]]] = {}
        """Per server (not the sandbox) and side, where each run's wall time went
        (timeline.py), in run order."""

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

    def compile(self, *trees: Path) -> None:
        """Byte-compile every module of ``trees`` into the children's cache, as pip does at
        install time, and check it is there: start-up is measured with bytecode compiled."""
        env_prefix = sys.pycache_prefix
        sys.pycache_prefix = str(self.pycache)
        try:
            for tree in trees:
                if not compileall.compile_dir(tree, quiet=1, workers=1):
                    raise RuntimeError(f"byte-compiling {tree} failed")
        finally:
            sys.pycache_prefix = env_prefix
        probe = self.src / "recordsync" / "cli" / "__init__.py"
        cached = Path(str(self.pycache) + str(probe.parent))
        if not any(cached.glob("__init__.*.pyc")):
            raise RuntimeError(f"no bytecode for {probe} under {self.pycache}")

    def warm_up(
        self, servers: list[str], sides: tuple[str, ...], baseline: Path | None = None
    ) -> None:
        """Byte-compile recordsync's tree(s) (``compile``), then one untimed run of each side
        into each server (200 rows): whatever else a run imports gets its bytecode cached too
        (the children run with ``PYTHONPYCACHEPREFIX`` in the temporary folder), as an
        installed package has; without it an environment with ``PYTHONDONTWRITEBYTECODE``
        set compiles recordsync's modules in every run (0.1-0.2 s) while the bare loop
        imports only installed, compiled packages."""
        self.compile(self.src, *([baseline] if baseline is not None else []))
        small = Context(
            self.root / "warm-up",
            200,
            self.src,
            self.no_state,
            self.pycache,
            self.delay_ms,
            self.peers_input,
        )
        for server in servers:
            for side in sides:
                if side == "baseline":
                    one_run("recordsync", server, "warm-up", small, src=baseline)
                else:
                    one_run(side, server, "warm-up", small)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5, help="interleaved rounds per server")
    parser.add_argument(
        "--servers",
        nargs="+",
        choices=("noop", "sandbox", "slow"),
        default=["noop", "sandbox"],
    )
    parser.add_argument("--no-state", action="store_true", help="recordsync with --no-state")
    parser.add_argument(
        "--no-state-too", action="store_true", help="also recordsync --no-state in every round"
    )
    parser.add_argument(
        "--peers",
        nargs="*",
        choices=PEERS,
        default=None,
        help="also these peers (none named: all of them, drt-core tuned and natural, dlt)",
    )
    parser.add_argument(
        "--peers-input",
        choices=("modelled", "raw"),
        default="modelled",
        help="what the peers read: the objects recordsync sends, as a modelled table (the"
        " same objects arrive), or the raw CSV (they send four fields of it, unconverted)",
    )
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the slow server's wait")
    parser.add_argument(
        "--slow-rows", type=int, default=20_000, help="rows into the slow server (<= --rows)"
    )
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
    baseline = args.baseline_src.resolve() if args.baseline_src else None
    sides: tuple[str, ...] = (
        "recordsync",
        "bare",
        *(["nostate"] * args.no_state_too),
        *(["baseline"] * (baseline is not None)),
        *(["floor"] * args.floor),
        *((args.peers or PEERS) if args.peers is not None else ()),
    )
    if args.peers is not None:
        peer_python()  # installs them on first use, before any clock runs
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-") as tmp:
        root = Path(tmp)
        ctx = Context(
            root / "main",
            args.rows,
            args.src.resolve(),
            args.no_state,
            None,
            args.delay_ms,
            args.peers_input,
        )
        contexts = {server: ctx for server in args.servers}
        if "slow" in args.servers and args.slow_rows != args.rows:
            contexts["slow"] = Context(
                root / "slow",
                min(args.slow_rows, args.rows),
                ctx.src,
                args.no_state,
                ctx.pycache,
                args.delay_ms,
                args.peers_input,
            )
        if args.floor:
            ctx.check_floor()
        ctx.warm_up(args.servers, sides, baseline)
        print(
            f"{args.rows:,} contacts ({contexts.get('slow', ctx).rows:,} into the slow server,"
            f" {args.delay_ms:g} ms per answer), {args.pairs} rounds per server, recordsync from"
            f" {ctx.src}{f' (baseline {baseline})' if baseline else ''}, state store"
            f" {'off' if args.no_state else 'on'}; sides {', '.join(sides)}"
            f"{f' (peers read the {args.peers_input} table)' if args.peers is not None else ''};"
            f" load average {load()}",
            flush=True,
        )
        runs: dict[str, dict[str, list[Measured]]] = {
            s: {side: [] for side in sides} for s in args.servers
        }
        try:
            for n in range(args.pairs):
                for server in args.servers:
                    for side in sides if n % 2 == 0 else sides[::-1]:
                        c = contexts[server]
                        if side == "baseline":
                            run = one_run("recordsync", server, f"{n}", c, src=baseline)
                        else:
                            run = one_run(side, server, f"{n}", c)
                        runs[server][side].append(run)
                    print_pair(n, server, {side: runs[server][side][-1] for side in sides})
                    for side, where in contexts[server].splits.get(server, {}).items():
                        print(f"    {side:11} {line(where[-1])}", flush=True)
        except BaselineError as exc:
            print(str(exc), flush=True)
            sys.exit(2)
        print(f"load average at the end: {load()}")
        for server in args.servers:
            loops = contexts[server].loops[server][-args.pairs :]
            trip = statistics.median(t.median_ms for t in loops)
            rate = statistics.median(t.per_second for t in loops)
            low = contexts[server].low.get(server, [])
            print(
                f"{server}: baseline (plausible.py): TCP_NODELAY on, the bare loop's median round"
                f" trip {trip:.1f} ms, {rate:.0f} requests/s;"
                + (
                    f" under its floor in {len(low)} of {len(loops)} rounds"
                    if low
                    else " plausible"
                )
            )

        def judged(server: str, ok: bool) -> str:
            low = contexts[server].low.get(server, [])
            if low:
                return f"no verdict (baseline under its floor: {low[0]})"
            return verdict(ok)

        peaks: list[float] = []
        for server in args.servers:
            peaks += [m.peak_mb for m in runs[server]["recordsync"]]
            summarise(server, runs[server])
        print_table(args, runs, contexts)
        for server in args.servers:
            med = {side: statistics.median(m.wall for m in ms) for side, ms in runs[server].items()}
            ratio = statistics.median(ratios(runs[server], "recordsync"))
            print(f"{server}: bare/recordsync, median of rounds {ratio:.2f}x")
            print_splits(server, contexts[server].splits.get(server, {}))
            if server == "slow":
                print(
                    f"target into slow: bare/recordsync >= 0.97x: {ratio:.2f}x"
                    f" {judged(server, ratio >= 0.97)}"
                )
            ran = [side for side in PEERS if side in med]
            if "drt-tuned" in med and server == "noop":
                cpu = {
                    side: statistics.median(m.cpu for m in runs[server][side]) * 1e6 / ctx.rows
                    for side in ("recordsync", "drt-tuned")
                }
                print(
                    f"target into noop: client CPU per row, recordsync (state on) <= drt tuned:"
                    f" {cpu['recordsync']:.1f} us against {cpu['drt-tuned']:.1f} us"
                    f" {judged(server, cpu['recordsync'] <= cpu['drt-tuned'])}"
                )
            if ran:
                lead = min(med[p] / med["recordsync"] for p in ran)
                print(
                    f"target into {server}: recordsync (state on) ahead of every peer: smallest"
                    f" lead {lead:.2f}x ({', '.join(f'{p} {med[p]:.2f} s' for p in ran)};"
                    f" recordsync {med['recordsync']:.2f} s) {judged(server, lead > 1)}"
                )
        print(
            f"target peak RSS of a {args.rows:,}-row run <= 200 MB (at 100k):"
            f" {max(peaks):.0f} MB (largest of {len(peaks)}) {verdict(max(peaks) <= 200)}"
        )


def print_splits(server: str, splits: dict[str, list[Split]]) -> None:
    """Where each side's wall time went into ``server``, medians of its rounds (timeline.py):
    the gaps and the time to the first request barely move with the machine's load."""
    for side, runs in splits.items():

        def med(what: str, runs: list[Split] = runs) -> float:
            return statistics.median(getattr(r, what) for r in runs)

        print(
            f"{server}: {side:11} medians: to first request {med('start'):.3f} s, to first"
            f" batch {med('first'):.3f} s (first request to first batch {med('prepare'):.3f} s),"
            f" gaps {med('gap_total'):.3f} s in all (median gap"
            f" {med('gap_median_ms'):.2f} ms, p90 {med('gap_p90_ms'):.2f} ms), tail"
            f" {med('tail'):.3f} s"
        )


def ratios(runs: dict[str, list[Measured]], side: str) -> list[float]:
    """bare / ``side`` wall time, round by round."""
    return [b.wall / s.wall for b, s in zip(runs["bare"], runs[side], strict=True)]


def print_table(
    args: argparse.Namespace,
    runs: dict[str, dict[str, list[Measured]]],
    contexts: dict[str, Context],
) -> None:
    """The medians as a markdown table (for bench/README.md)."""
    sides = list(next(iter(runs.values())))
    print(f"\nmedians of {args.pairs} interleaved rounds, load at the end {load()}:\n")
    print("| setting | " + " | ".join(sides) + " |")
    print("|---" * (len(sides) + 1) + "|")
    for server, by_side in runs.items():
        c = contexts[server]
        name = SETTINGS[server].format(delay=f"{args.delay_ms:g}") + f" ({c.rows:,} rows)"
        med = partial(median_of, by_side)
        cells = [f"{med(side, 'wall'):.2f} s" for side in sides]
        print(f"| {name}, wall | " + " | ".join(cells) + " |")
        cells = [f"{med(side, 'cpu'):.2f} s" for side in sides]
        print(f"| {name}, client CPU | " + " | ".join(cells) + " |")
        cells = [f"{med(side, 'peak_mb'):.0f} MB" for side in sides]
        print(f"| {name}, peak RSS | " + " | ".join(cells) + " |")
        if server == "slow":
            limit = -(-c.rows // 100) * args.delay_ms / 1000
            cells = [f"{limit / med(side, 'wall'):.2f}" for side in sides]
            print(f"| {name}, share of the limit | " + " | ".join(cells) + " |")
    print()


def median_of(by_side: dict[str, list[Measured]], side: str, what: str) -> float:
    return statistics.median(getattr(m, what) for m in by_side[side])


def print_pair(n: int, server: str, pair: dict[str, Measured]) -> None:
    bare = pair["bare"]
    print(
        f"round {n + 1} {server:7}: bare {bare.wall:6.2f} s ({bare.cpu:5.1f} s CPU, peak"
        f" {bare.peak_mb:4.0f} MB) | arrived exactly once: all {len(pair)} | load {load()}",
        flush=True,
    )
    for side, m in pair.items():
        if side != "bare":
            print(
                f"    {side:11} {m.wall:6.2f} s ({m.cpu:5.1f} s CPU, peak {m.peak_mb:4.0f} MB)"
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
            f"{server}: {side} median {med:.2f} s; bare/{side} median of rounds"
            f" {statistics.median(r):.2f}x (range {min(r):.2f}-{max(r):.2f}x), of the medians"
            f" {bare_med / med:.2f}x; peak RSS {peak(measured)} MB"
        )
    if "baseline" in runs:
        sp = [b.wall / r.wall for b, r in zip(runs["baseline"], runs["recordsync"], strict=True)]
        print(
            f"{server}: baseline / recordsync wall, median of rounds {statistics.median(sp):.3f}x"
            f" (range {min(sp):.3f}-{max(sp):.3f}x; above 1: recordsync faster)"
        )


def peak(measured: list[Measured]) -> str:
    return f"{statistics.median(m.peak_mb for m in measured):.0f}"


if __name__ == "__main__":
    main()

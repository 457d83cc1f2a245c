"""Benchmark: where a 1%-changed nightly run's memory peaks, with the sizes it is bounded by.

    python bench/bench_mem_trace.py [--rows 1000000] [--scale 10] [--baseline-src DIR]
                                    [--sizes NAME=VALUE ...]

The rows of ``bench_sql_scale.py``'s contacts table (its ``rid`` key as the mapping's ledger
key, in key order, as a query source gives them) as a CSV file, into the no-op server
(bench/noop_server.py), state on SQLite. A first run (this tree) writes the state, which is
kept; then 1% of the rows change (every 100th ``rid`` gets a new title, as in
``bench_sql_scale.py``) and the 1%-changed run runs from a copy of that state, in a fresh
child per side (``--baseline-src``: recordsync from DIR first, then this tree), each checked
at the server (exactly the changed rows arrived, by e-mail).

``--scale K`` divides every row-count bound of ``recordsync.tuning.sizes`` that decides what
a run holds (the snapshot's digests in memory, the unmatched rows kept, the spills) by K in
the child, so that a run of N rows takes the paths a run of K * N rows takes; ``--sizes``
sets others. The child samples its own RSS every 20 ms in a thread and, each time it grows
by 4 MB past its highest, prints the Arrow pool's bytes and the recordsync frames of every
thread: where the peak is made.

``--source duckdb``: the same rows as a Parquet file read by a DuckDB query (key ``rid``), as
``bench_sql_scale.py`` reads them. ``--unchanged``: the runs after the first are unchanged
re-runs (nothing may arrive) instead of 1%-changed runs.

``--pushdown``: the table in a PostgreSQL server started here, read with ``change_detection:
database`` (the diff made in the database); the database's table of synced rows is kept after
the first run and put back before each changed run, as the state is. ``--every N``: every Nth
row changes (100: 1%), to vary the changed rows at a fixed table size. ``BENCH_TRACE=rows``
(``--variant rows``, with ``nofreeze`` to see frozen rows) logs the live PreparedRows at each
step of the trace; ``--tracemalloc FRAMES`` logs the top allocations by traceback each time
the traced memory grows by 16 MB (slow: its RSS is not the run's).

``--stale``: the changed runs are made after a mapping change that changes the step's
fingerprint but no batch input (``source.null_values: ['__no_such_cell__']`` added), so the
snapshot of source-row digests cannot be used and every row takes the full path (read, mapped,
validated, its input compared with the ledger's). ``BENCH_PROFILE=FILE`` dumps a cProfile of
each child's ``run_pipeline``: the first run's to FILE, each 1% run's to FILE with its
side's name appended (``FILE.baseline``, ``FILE.this``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from measure import vm_hwm_mb  # noqa: E402

SCALED = (
    "SNAPSHOT_MEMORY_ROWS",
    "UNMATCHED_KEEP_ROWS",
    "DUPLICATE_SPILL_ROWS",
    "SEEN_SPILL_ROWS",
    "MERGE_SPILL_ROWS",
    "FOLD_ROWS",
    "FOLD_FROM",
)
"""The row-count bounds divided by ``--scale`` (those past which a run holds less)."""


def _status() -> dict[str, float]:
    """VmRSS and its parts (anonymous, file-backed), MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _malloc() -> str:
    """glibc's heap: bytes in use, free (kept) and mapped on their own, MB."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return ""
    fn.restype = _Mallinfo2
    m = fn()
    mb = 2**20
    return (
        f"malloc used {m.uordblks / mb:5.0f} free {m.fordblks / mb:5.0f}"
        f" mmap {m.hblkhd / mb:4.0f}"
    )


def _stacks() -> list[str]:
    out = []
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        parts = []
        f: Any = frame
        while f is not None and len(parts) < 7:
            code = f.f_code
            if "recordsync" in code.co_filename:
                mod = code.co_filename.rsplit("recordsync/", 1)[-1].removesuffix(".py")
                parts.append(f"{mod}:{code.co_name}:{f.f_lineno}")
            f = f.f_back
        if parts:
            out.append(f"[{names.get(ident, ident)}] " + " < ".join(parts))
    return out


def _top_allocations(limit: int = 12) -> list[str]:
    """tracemalloc's largest live allocations now, by traceback (``BENCH_TRACEMALLOC``)."""
    import tracemalloc

    snap = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    out = []
    for stat in snap.statistics("traceback")[:limit]:
        frames = [f"{f.filename.rsplit('/src/', 1)[-1]}:{f.lineno}" for f in stat.traceback]
        out.append(f"  {stat.size / 2**20:7.1f} MB {stat.count:8d} blocks  " + " < ".join(
            reversed(frames[-6:])))
    return out


def _live_rows() -> int:
    """How many PreparedRows are alive (``BENCH_TRACE=rows``: the rows a run holds at once)."""
    import gc

    from recordsync.core.model import PreparedRow

    return sum(1 for o in gc.get_objects() if type(o) is PreparedRow)


def tracer(stop: threading.Event, log: list[str]) -> None:
    import pyarrow as pa

    t0 = time.perf_counter()
    high = hwm = 0.0
    shown = 0.0
    live = os.environ.get("BENCH_TRACE_FILE")
    written = 0
    traced = bool(os.environ.get("BENCH_TRACEMALLOC"))
    counted = "rows" in os.environ.get("BENCH_TRACE", "").split(",")
    # (frozen objects are not in gc.get_objects(): count with nofreeze)
    traced_high = 0
    while not stop.wait(0.02):
        st = _status()
        rss = st.get("VmRSS", 0.0)
        now = time.perf_counter() - t0
        peak = st.get("VmHWM", 0.0) >= hwm + 4  # a peak between two samples: where it went
        if rss >= high + 4 or now >= shown + 5 or peak:
            grew = rss >= high + 4 or peak
            high = max(high, rss)
            hwm = max(hwm, st.get("VmHWM", 0.0))
            shown = now
            arrow = pa.total_allocated_bytes() / 2**20
            log.append(
                f"{now:7.1f} s RSS {rss:6.0f} MB (anon {st.get('RssAnon', 0):4.0f} file"
                f" {st.get('RssFile', 0):4.0f}) arrow {arrow:5.0f} MB {_malloc()}"
                f" pyblocks {sys.getallocatedblocks() / 1e6:5.2f}M{'' if grew else ' (tick)'}"
                f" HWM {st.get('VmHWM', 0):6.0f}"
            )
            if grew:
                log.extend("      " + s for s in _stacks())
            if grew and counted:
                log.append(f"      live PreparedRows {_live_rows()}")
            if grew and traced:
                import tracemalloc

                now_b = tracemalloc.get_traced_memory()[0]
                if now_b >= traced_high + 16 * 2**20:
                    traced_high = now_b
                    log.append(f"      tracemalloc: {now_b / 2**20:.1f} MB traced; top:")
                    log.extend(_top_allocations())
            if live:  # as it goes (the run's own trace comes at its end)
                with open(live, "a") as f:
                    f.write("".join(x + "\n" for x in log[written:]))
                written = len(log)


def _experiments() -> None:
    """What ``BENCH_TRACE`` asks for (comma-separated): ``trim2`` returns freed heap pages
    after each batch of the second pass; ``mmap=N`` fixes glibc's mmap threshold at N bytes
    (no dynamic threshold)."""
    asked = [a for a in os.environ.get("BENCH_TRACE", "").split(",") if a]
    for a in asked:
        if a == "rows":
            continue  # the tracer counts the live PreparedRows
        if a == "nofreeze":  # no gc.freeze of the batches (the GC sees every row)
            from recordsync.tuning import gcpause

            gcpause.BatchGC._freeze = lambda self: None  # type: ignore[method-assign]
            continue
        if a == "trim2":
            from recordsync.prepare import digests
            from recordsync.tuning import native_memory

            inner = digests._second_pass

            def trimmed(*args: Any, inner: Any = inner) -> Iterator[Any]:
                for got in inner(*args):
                    yield got
                    native_memory.give_back()

            digests._second_pass = trimmed
        elif a.startswith("mmap="):
            lib = ctypes.CDLL(None)
            lib.mallopt(-3, int(a.split("=")[1]))  # M_MMAP_THRESHOLD


def child(root: Path, url: str, overrides: dict[str, int]) -> None:
    try:
        from recordsync.cli.startup import leave_out_unused
    except ImportError:
        pass
    else:
        leave_out_unused()
    from project import KEY

    from recordsync.core.secret import Secret
    from recordsync.run.pipeline import RunRequest, run_pipeline
    from recordsync.run.target import Target
    from recordsync.tuning import Tuning, sizes

    for name, value in overrides.items():
        setattr(sizes, name, value)
    _experiments()
    if os.environ.get("BENCH_TRACEMALLOC"):
        import tracemalloc

        tracemalloc.start(int(os.environ["BENCH_TRACEMALLOC"]))
    log: list[str] = []
    stop = threading.Event()
    th = threading.Thread(target=tracer, args=(stop, log), daemon=True, name="tracer")
    th.start()
    start = vm_hwm_mb()
    profiled = os.environ.get("BENCH_PROFILE")
    profiler = None
    if profiled:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t, c = time.perf_counter(), time.process_time()
    result = run_pipeline(
        RunRequest(
            root / "pipelines" / "bench.yaml",
            report_dir=root / "reports",
            state_db=root / "state" / "state.db",
            tuning=Tuning.all(),
        ),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profiled))
    stop.set()
    th.join()
    print("\n".join(log), file=sys.stderr)
    totals = result.summary["totals"]
    print(json.dumps({
        "peak_mb": round(vm_hwm_mb(), 1), "start_mb": round(start, 1), "wall": round(wall, 1),
        "cpu": round(cpu, 1), "exit": result.exit_code,
        "totals": {k: v for k, v in totals.items() if isinstance(v, int) and v},
    }))


_SYNCED = "recordsync.synced"
"""The database mode's table of synced rows (the default ``state_schema``)."""


def keep_synced(dsn: str, restore: bool) -> None:
    """--pushdown: the database's synced rows after the first run, kept beside (``restore``:
    put back before each 1% run, as the state store's copy is)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        if restore:
            conn.execute(f"TRUNCATE {_SYNCED}")
            conn.execute(f"INSERT INTO {_SYNCED} SELECT * FROM public.bench_synced0")
        else:
            conn.execute(f"CREATE TABLE public.bench_synced0 AS SELECT * FROM {_SYNCED}")


def write_csv(path: Path, n: int, changed: bool) -> None:
    import duckdb
    from bench_sql_scale import contacts_sql

    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    sql = contacts_sql(f"range(1, {n + 1}) AS t(g)", changed)
    con.execute(f"COPY ({sql} ORDER BY rid) TO '{path}' (FORMAT csv, HEADER)")
    con.close()


def make_project(root: Path, source: str, verify: bool, pushdown: bool = False) -> None:
    configs = root / "configs"
    configs.mkdir()
    mapping = yaml.safe_load((ROOT / "configs" / "contacts.yaml").read_text(encoding="utf-8"))
    if source == "postgres":  # as bench_sql_scale.py: its key the ledger key
        mapping["source"] = {
            "query": "SELECT * FROM contacts", "key": "rid", "engine": "postgres",
            "dsn_env": "BENCH_PG_DSN", "name": "contacts",
        }
        if pushdown:  # the diff made in the database (docs/state.md, "Large tables")
            mapping["source"]["change_detection"] = "database"
    elif source == "duckdb":  # as bench_sql_scale.py: a Parquet file read by DuckDB
        mapping["source"] = {
            "query": f"SELECT * FROM '{(root / 'data' / 'contacts.parquet').as_posix()}'",
            "key": "rid", "name": "contacts",
        }
    else:
        mapping["source"] = {"path": "../data/contacts.csv"}
        mapping["ledger_key"] = {"column": "rid"}
    (configs / "contacts.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False), "utf-8")
    shutil.copy(ROOT / "configs" / "owners.yaml", configs / "owners.yaml")
    pipelines = root / "pipelines"
    pipelines.mkdir()
    (pipelines / "bench.yaml").write_text(
        "name: bench\nsteps:\n  - ../configs/contacts.yaml\nsend:\n  chunk_size: 100\n"
        "  canary_chunk_size: 100\n" + ("" if verify else "verify: {enabled: false}\n"),
        encoding="utf-8",
    )


def stale_mapping(root: Path, stale: bool) -> None:
    """--stale: a mapping change that changes the step's fingerprint and no batch input
    (a null marker no cell holds); without it, the mapping as the first run had it."""
    path = root / "configs" / "contacts.yaml"
    mapping = yaml.safe_load(path.read_text(encoding="utf-8"))
    if stale:
        mapping["source"]["null_values"] = ["__no_such_cell__"]
    else:
        mapping["source"].pop("null_values", None)
    path.write_text(yaml.safe_dump(mapping, sort_keys=False), "utf-8")


def run_child(
    root: Path, url: str, overrides: dict[str, int], src: Path | None, trace: str = "",
    tracemalloc: int = 0, side: str = "",
) -> dict[str, Any]:
    env = dict(os.environ, BENCH_TRACE=trace)
    if env.get("BENCH_PROFILE") and side:
        env["BENCH_PROFILE"] = f"{env['BENCH_PROFILE']}.{side.split(',')[0].replace(' ', '_')}"
    if tracemalloc:
        env["BENCH_TRACEMALLOC"] = str(tracemalloc)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(root), url, json.dumps(overrides)],
        capture_output=True, text=True, env=env,
    )
    if out.returncode != 0:
        sys.exit(f"the run failed:\n{out.stderr[-4000:]}")
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    got["trace"] = out.stderr
    return got


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--sizes", nargs="*", default=[], help="NAME=VALUE of tuning.sizes")
    ap.add_argument("--baseline-src", type=Path)
    ap.add_argument("--repeat", type=int, default=1, help="1%% runs per side, interleaved")
    ap.add_argument("--quiet", action="store_true", help="no trace")
    ap.add_argument("--trace-first", action="store_true", help="the first run's trace too")
    ap.add_argument("--unscaled", action="store_true",
                    help="also the 1%% run with the sizes as they are (this tree)")
    ap.add_argument("--every", type=int, default=100,
                    help="every that many rows change (100: 1%%)")
    ap.add_argument("--workdir", type=Path,
                    help="keep the data and the first run's state here (reused when there)")
    ap.add_argument("--source", choices=("csv", "postgres", "duckdb"), default="csv",
                    help="postgres: the table in a PostgreSQL server started here (no --workdir);"
                    " duckdb: the rows as a Parquet file read by a DuckDB query")
    ap.add_argument("--unchanged", action="store_true",
                    help="the runs after the first are unchanged re-runs (nothing may arrive)")
    ap.add_argument("--variant", nargs="*", default=[],
                    help="more 1%% runs of this tree with BENCH_TRACE set to each (trim2, mmap=N)")
    ap.add_argument("--only-variants", action="store_true", help="no plain 1%% run of this tree")
    ap.add_argument("--verify", action="store_true", help="the read-back on (as bench_sql_scale)")
    ap.add_argument("--pushdown", action="store_true",
                    help="--source postgres with change_detection: database")
    ap.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                    help="the 1%% runs under tracemalloc (FRAMES deep): the top allocations"
                    " by traceback each time the traced memory grows by 16 MB")
    ap.add_argument("--stale", action="store_true",
                    help="the changed runs after a mapping change that changes the step's"
                    " fingerprint (no batch input): every row takes the full path")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pushdown:
        args.source = "postgres"
    if args.child:
        child(Path(args.child[0]), args.child[1], json.loads(args.child[2]))
        return
    import bench_sql_scale
    import httpx
    from bench_sql_scale import changed_emails
    from noop_server import counts, noop_server, write_meta
    from project import KEY

    bench_sql_scale.EVERY = args.every

    from recordsync.tuning import sizes

    n = args.rows
    overrides = {name: max(1, getattr(sizes, name) // args.scale) for name in SCALED}
    overrides = overrides if args.scale > 1 else {}
    for kv in args.sizes:
        name, value = kv.split("=")
        overrides[name] = int(value)
    print("load average:", "/".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    print(f"sizes: {overrides}", flush=True)
    with ExitStack() as stack:
        if args.workdir is None:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memtrace-")))
        else:
            base = args.workdir.resolve() / f"rows{n}"
            base.mkdir(parents=True, exist_ok=True)
        root = base / "p"
        kept = (base / "state0").exists()
        if not kept:
            shutil.rmtree(root, ignore_errors=True)
            (root / "data").mkdir(parents=True)
            (root / "state").mkdir()
            make_project(root, args.source, args.verify, args.pushdown)
            if args.source == "csv":
                write_csv(root / "data" / "contacts.csv", n, changed=False)
            elif args.source == "duckdb":
                bench_sql_scale.write_parquet(root / "data" / "contacts.parquet", n, False)
            (base / "port").write_text(str(free_port()))
        port = int((base / "port").read_text())
        meta = base / "meta.json"
        if not meta.exists():
            write_meta(meta)
        url = stack.enter_context(noop_server(meta, KEY, port=port))
        if args.source == "postgres":
            if kept:
                sys.exit("--source postgres keeps no state (its server is started here)")
            sys.path.insert(0, str(ROOT / "tests" / "read"))
            from servers import postgres_server

            dsn = stack.enter_context(postgres_server())
            os.environ["BENCH_PG_DSN"] = dsn
            bench_sql_scale.load_postgres(dsn, n)
        if not kept:
            first = run_child(root, url, overrides, None)
            if args.trace_first:
                print(first["trace"], flush=True)
            got = counts(url)["entries"].get("contacts")
            print(f"{n:,} rows first run: peak {first['peak_mb']:.0f} MB, {first['wall']} s,"
                  f" {got:,} arrived", flush=True)
            shutil.copytree(root / "state", base / "state0")
            if args.pushdown:
                keep_synced(os.environ["BENCH_PG_DSN"], restore=False)
        stale_mapping(root, args.stale)
        if args.unchanged:  # the rows as the first run read them (a kept workdir's changed)
            if kept and args.source == "duckdb":
                bench_sql_scale.write_parquet(root / "data" / "contacts.parquet", n, False)
            elif kept and args.source == "csv":
                write_csv(root / "data" / "contacts.csv", n, changed=False)
        elif args.source == "postgres":
            bench_sql_scale.change_postgres(os.environ["BENCH_PG_DSN"])
        elif args.source == "duckdb":
            bench_sql_scale.write_parquet(root / "data" / "contacts.parquet", n, True)
        else:
            write_csv(root / "data" / "contacts.csv", n, changed=True)
        want = set() if args.unchanged else changed_emails(n)
        sides: dict[str, tuple[Path | None, dict[str, int]]] = {"this": (None, overrides)}
        if args.baseline_src is not None:
            sides = {"baseline": (args.baseline_src.resolve(), overrides), **sides}
        if args.unscaled:
            sides["this, sizes as they are"] = (None, {})
        if args.only_variants:  # the baseline's run, if asked for, and the variants
            sides = {k: v for k, v in sides.items() if k == "baseline"}
        for spec in args.variant:
            sides[spec] = (None, overrides)
        what = "unchanged" if args.unchanged else f"every {args.every}th changed"
        peaks: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for side, (src, sized) in sides.items():
                shutil.rmtree(root / "state")
                shutil.copytree(base / "state0", root / "state")
                if args.pushdown:
                    keep_synced(os.environ["BENCH_PG_DSN"], restore=True)
                httpx.delete(url + "/_counts", timeout=60).raise_for_status()
                load = os.getloadavg()[0]
                env_trace = side if side.startswith(("trim2", "mmap=", "rows", "nofreeze")) else ""
                res = run_child(root, url, sized, src, env_trace, args.tracemalloc, side)
                ids = httpx.get(url + "/_counts", params={"identities": "1"}, timeout=600).json()
                arrived = {i.split(":", 1)[1] for i in ids["identities"].get("contacts", {})}
                entries = ids["entries"].get("contacts", 0)
                ok = arrived == want and entries == len(want)
                peaks.setdefault(side, []).append(res["peak_mb"])
                if not args.quiet:
                    print(res["trace"], flush=True)
                print(
                    f"{n:,} rows, {what} ({side}):"
                    f" peak {res['peak_mb']:.0f} MB (after imports {res['start_mb']:.0f}),"
                    f" {res['wall']} s, CPU {res['cpu']} s,"
                    f" exit {res['exit']}, {entries:,} arrived"
                    f" ({'exactly the changed rows' if ok else 'NOT the changed rows'}),"
                    f" load {load:.2f} -> {os.getloadavg()[0]:.2f}; {res['totals']}",
                    flush=True,
                )
                if not ok:
                    sys.exit("wrong rows arrived")
        print({side: v for side, v in peaks.items()})


if __name__ == "__main__":
    main()

"""Benchmark a dry run's read + map + validate (``prepare_step``) of a contacts source read
from PostgreSQL and from DuckDB, beside the same rows as a Parquet file.

    python bench/bench_sql_sources.py [--rows 1000000] [--repeat 1] [--baseline-src DIR]

Generates the contacts Parquet file of bench_dryrun.py (bench/out/, gitignored), loads it
into a DuckDB database file and into a PostgreSQL server this script starts (initdb + pg_ctl
on a temporary directory, a unix socket only; tests/read/servers.py) with a key column
``rid``, then prepares each source in a fresh subprocess with the schema and users of the
default seed, as ``recordsync run --dry-run`` does. Reports wall and CPU time as rows/s and
the child's peak RSS (VmHWM). The query sources read ``SELECT * FROM contacts`` ordered
by ``rid`` (the key); the mapping is configs/contacts.yaml with only its source replaced.
``--baseline-src DIR`` also runs each query case with recordsync imported from ``DIR`` (an
older tree's ``src``), interleaved, and prints this tree's speed over the baseline's.
``--tuning cli`` turns on the process-wide tweaks the command line turns on
(``recordsync.tuning.enable()``: among them the garbage collector paused while a batch's rows
are built); the default, ``library``, measures ``prepare_step`` as a library caller gets it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests" / "read")]

from bench_dryrun import OUT, generate, prepare_all, seed_meta, vm_hwm_mb  # noqa: E402


def load_duckdb(pq_path: Path, n: int) -> Path:
    import duckdb

    db = OUT / f"contacts_{n}.duckdb"
    if not db.exists():
        con = duckdb.connect(str(db))
        con.execute(
            "CREATE TABLE contacts AS SELECT row_number() OVER () AS rid, *"
            f" FROM read_parquet('{pq_path}')"
        )
        con.close()
    return db


def load_postgres(dsn: str, pq_path: Path) -> None:
    import psycopg
    import pyarrow.parquet as pq

    table = pq.read_table(pq_path)
    names = table.schema.names
    cols = ", ".join(f'"{c}" text' for c in names)
    quoted = ", ".join(f'"{c}"' for c in names)
    rid = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE contacts (rid bigint PRIMARY KEY, {cols})")
        with conn.cursor() as cur, cur.copy(f"COPY contacts (rid, {quoted}) FROM STDIN") as cp:
            for batch in table.to_batches(50_000):
                for row in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                    rid += 1
                    cp.write_row((rid, *row))
        conn.execute("VACUUM ANALYZE contacts")


def child(kind: str, target: str, meta: Path) -> None:
    """Run one case in this process and print a JSON line."""
    from recordsync.config import SourceConfig, load_mapping

    data = json.loads(meta.read_text())
    if os.environ.get("BENCH_TUNING") == "cli":
        from recordsync import tuning

        tuning.enable()
    mapping = load_mapping(ROOT / "configs" / "contacts.yaml")
    if kind == "parquet":
        source = SourceConfig(path=target)
    elif kind == "duckdb":
        source = SourceConfig(query="SELECT * FROM contacts", database=target, key=["rid"])
    else:
        source = SourceConfig(
            query="SELECT * FROM contacts", engine="postgres", dsn_env="BENCH_PG_DSN", key=["rid"]
        )
    mapping = mapping.model_copy(update={"source": source})
    t0 = time.perf_counter()
    c0 = time.process_time()
    rows = prepare_all(mapping, data)
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss_mb = vm_hwm_mb()
    result = {"rows": rows, "seconds": round(secs, 3), "cpu_seconds": round(cpu, 3)}
    print(json.dumps(result | {"peak_rss_mb": round(rss_mb, 1)}))


def run_case(
    kind: str, target: str, meta: Path, env: dict[str, str], src: Path | None = None
) -> dict[str, Any]:
    if src is not None:
        env = dict(env, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, target, str(meta)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the best is shown)")
    ap.add_argument("--cases", nargs="+", default=["parquet", "duckdb", "postgres"])
    ap.add_argument("--baseline-src", type=Path, help="also run the query cases from this src")
    ap.add_argument(
        "--tuning",
        choices=["library", "cli"],
        default="library",
        help="cli: the process-wide tweaks on, as the command line has them",
    )
    ap.add_argument("--child", nargs=3, metavar=("KIND", "TARGET", "META"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], Path(args.child[2]))
        return
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    print("tuning:", args.tuning)
    from servers import postgres_server

    n = args.rows
    meta = seed_meta()
    _, pq_path = generate(n)
    db = load_duckdb(pq_path, n)
    results = []
    with postgres_server() as dsn:
        t0 = time.perf_counter()
        load_postgres(dsn, pq_path)
        print(f"loaded {n:,} rows into PostgreSQL in {time.perf_counter() - t0:.1f} s", flush=True)
        env = dict(os.environ, BENCH_PG_DSN=dsn, BENCH_TUNING=args.tuning)
        cases = (("parquet", str(pq_path)), ("duckdb", str(db)), ("postgres", ""))
        sides: dict[str, Path | None] = {"": None}
        if args.baseline_src is not None:
            sides = {" (baseline)": args.baseline_src.resolve(), "": None}
        for kind, target in (c for c in cases if c[0] in args.cases):
            best: dict[str, float] = {}
            runs_of: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for _ in range(args.repeat):
                for side, src in sides.items():
                    if side and kind == "parquet":
                        continue
                    runs_of[side].append(run_case(kind, target, meta, env, src))
            for side, runs in runs_of.items():
                if not runs:
                    continue
                secs = min(r["seconds"] for r in runs)
                cpu = min(r["cpu_seconds"] for r in runs)
                rss = max(r["peak_rss_mb"] for r in runs)
                best[side] = secs
                results.append({"case": kind + side, "n": n, "runs": runs})
                print(
                    f"{kind + side:19} {n:>9,} rows  best of {len(runs)}: {secs:6.2f} s wall"
                    f" {n / secs:>9,.0f} rows/s  {cpu:6.2f} s CPU {n / cpu:>9,.0f} rows/CPU-s"
                    f"  peak RSS {rss:6.1f} MB  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            if len(best) == 2:
                print(f"{kind}: this tree {best[' (baseline)'] / best['']:.2f}x as fast as the"
                      " baseline", flush=True)
    (OUT / "results_sql_sources.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

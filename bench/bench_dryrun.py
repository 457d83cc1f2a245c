"""Benchmark read + map + validate (``prepare_step``) of a contacts source.

    python bench/bench_dryrun.py [--rows 100000 1000000]

Generates contacts CSVs and Parquet files (same columns as sample_data/contacts.csv) into
bench/out/ (gitignored), loads the schema and users of the default seed from the sandbox,
then runs each case ``--repeat`` times, each in a fresh subprocess, and reports wall and CPU
(process) time as rows/s — best and median of the runs, as the machine may be shared — and
peak RSS (VmHWM, read by the child itself; the largest of the runs), beside ``pandas.read_csv``
of the same file. Targets: >= 100k rows/s, peak RSS < 500 MB, and 1M-row RSS within 1.5x of 100k-row
RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import vm_hwm_mb  # noqa: E402

OUT = HERE / "out"
ROOT = HERE.parent


def generate(n: int) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    csv_path, pq_path = OUT / f"contacts_{n}.csv", OUT / f"contacts_{n}.parquet"
    if csv_path.exists() and pq_path.exists():
        return csv_path, pq_path
    rng = np.random.default_rng(42)
    first = np.array(["Ann", "Bob", "Carla", "Dmitri", "Elif", "Zoë", "Søren", "Priya"])
    last = np.array(["Brown", "Costa", "Müller", "O'Brien", "Tanaka", "López", "Xu"])
    stages = np.array(["Lead", "lead", "Qualified", "Customer", "customer", "Churned", ""])
    owners = np.array(
        ["ada@acme.example", " Ben@ACME.example ", "chloe@acme.example", "DIEGO@acme.example"]
    )
    bools = np.array(["yes", "no", "Y", "N", "1", "0", "true", "FALSE", ""])
    tags = np.array(["", "VIP", "Partner; Newsletter", "Churn risk", "vip; partner"])
    titles = np.array(["CTO", "VP, Sales", "Head of Data", "Analyst", ""])
    idx = np.arange(n)
    f, la = first[rng.integers(0, len(first), n)], last[rng.integers(0, len(last), n)]
    emails = np.char.add(np.char.add("user", idx.astype(str)), "@example.com")
    day = rng.integers(1, 29, n).astype(str)
    month = rng.integers(1, 13, n).astype(str)
    last_contacted = np.char.add(
        np.char.add(
            np.char.add(np.char.zfill(day, 2), "/"), np.char.add(np.char.zfill(month, 2), "/")
        ),
        "2025",
    )
    minutes = rng.integers(0, 60 * 24 * 600, n)
    signed = (np.datetime64("2024-01-01T00:00") + minutes.astype("timedelta64[m]")).astype(str)
    signed = np.char.replace(signed, "T", " ")
    table = pa.table(
        {
            "First Name": f,
            "Last Name": la,
            "Email": emails,
            "Phone": np.char.add("+44 20 ", rng.integers(1000000, 9999999, n).astype(str)),
            "Title": titles[rng.integers(0, len(titles), n)],
            "Stage": stages[rng.integers(0, len(stages), n)],
            "Score": rng.integers(0, 101, n).astype(str),
            "Newsletter": bools[rng.integers(0, len(bools), n)],
            "Last Contacted": last_contacted,
            "Tags": tags[rng.integers(0, len(tags), n)],
            "Company Domain": np.array(["acme.com", "beacon.io", "cedar.com"])[idx % 3],
            "Owner": owners[rng.integers(0, len(owners), n)],
            "Signed Up": signed,
        }
    )
    OUT.mkdir(parents=True, exist_ok=True)
    pcsv.write_csv(table, csv_path)
    pq.write_table(table, pq_path)
    return csv_path, pq_path


def seed_meta() -> Path:
    import warnings

    from starlette.testclient import TestClient

    from recordsync.sandbox import create_app

    OUT.mkdir(parents=True, exist_ok=True)
    meta = OUT / "seed_meta.json"
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(Path(d) / "bench.sqlite", api_key="sk_live_bench")
        with TestClient(app) as c:
            h = {"x-api-key": "sk_live_bench"}
            data = {
                "schema": c.get("/api/meta/schema", headers=h).json()["data"],
                "users": c.get("/api/meta/users", headers=h).json()["data"],
            }
    meta.write_text(json.dumps(data))
    return meta


def prepare_all(mapping: Any, data: dict[str, Any]) -> int:
    """Every row of ``mapping``'s source through ``prepare_step`` against the seed's schema
    and users (``data``); the rows read. Most must come out valid (else the benchmark
    measures a broken set-up)."""
    from recordsync.prepare import prepare_step
    from recordsync.validate import Schema

    rows = 0
    statuses: dict[Any, int] = {}
    for row in prepare_step(
        mapping,
        base_dir=ROOT / "configs",
        schema=Schema.from_api(data["schema"]),
        users=data["users"],
    ):
        rows += 1
        statuses[row.status] = statuses.get(row.status, 0) + 1
    assert statuses.get("valid", 0) > rows * 0.9, statuses
    return rows


def child(kind: str, path: Path, meta: Path) -> None:
    """Run one case in this process and print a JSON line."""
    import pandas as pd

    from recordsync.config import SourceConfig, load_mapping

    t0 = time.perf_counter()  # imports are not timed
    c0 = time.process_time()
    rows = 0
    if kind == "pandas":
        rows = len(pd.read_csv(path, dtype=str, keep_default_na=False))
    else:
        data = json.loads(meta.read_text())
        mapping = load_mapping(ROOT / "configs" / "contacts.yaml")
        mapping = mapping.model_copy(update={"source": SourceConfig(path=str(path.resolve()))})
        rows = prepare_all(mapping, data)
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss_mb = vm_hwm_mb()
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": round(secs, 3),
                "cpu_seconds": round(cpu, 3),
                "rows_per_s": round(rows / secs),
                "rows_per_cpu_s": round(rows / cpu),
                "peak_rss_mb": round(rss_mb, 1),
            }
        )
    )


def run_case(kind: str, path: Path, meta: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), str(meta)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per case (fresh process each); the best and the median are reported, "
        "since the machine may be shared",
    )
    ap.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "META"))
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    meta = seed_meta()
    results = []
    for n in args.rows:
        csv_path, pq_path = generate(n)
        for kind, path in (("csv", csv_path), ("parquet", pq_path), ("pandas", csv_path)):
            runs = [run_case(kind, path, meta) for _ in range(args.repeat)]
            best = {
                "seconds": min(r["seconds"] for r in runs),
                "cpu_seconds": min(r["cpu_seconds"] for r in runs),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            }
            med = {
                "seconds": statistics.median(r["seconds"] for r in runs),
                "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
            }
            res = {"case": kind, "n": n, "runs": runs, "best": best, "median": med}
            results.append(res)
            for label, v in (("best", best), ("median", med)):
                rss = f"  peak RSS {best['peak_rss_mb']:6.1f} MB (max)" if label == "best" else ""
                print(
                    f"{kind:8} {n:>9,} rows  {label:6} of {len(runs)}: "
                    f"{v['seconds']:6.2f} s wall {n / v['seconds']:>9,.0f} rows/s  "
                    f"{v['cpu_seconds']:6.2f} s CPU {n / v['cpu_seconds']:>9,.0f} rows/CPU-s{rss}",
                    flush=True,
                )
    (OUT / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark: batch upserts into sandboxes that already hold many contacts.

    python bench/bench_sandbox.py [--sizes 10000,100000,1000000] [--batches 500]

For each size, a fresh sandbox database is pre-populated with that many contacts through the
store layer (one bulk insert, no HTTP), then served over loopback (``run_in_thread``) and sent
``--batches`` batch requests of 100 contacts from one keep-alive ``httpx.Client``: half of each
batch are new contacts, half match existing contacts by email (``match_by: email``), as a
nightly sync sends them: same name, changed job title, lead score, stage and opt-in. Prints
rows/s per size and the ratio of the cost per row at the largest size to the smallest.

Targets on the project's 2-core machine: at least 5,000 rows/s, ratio at most 1.5.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from recordsync.sandbox import create_app
from recordsync.sandbox.normalize import email_key
from recordsync.sandbox.server import run_in_thread
from recordsync.sandbox.store import Keys, Store

KEY = "sk_live_bench"
STAGES = ("lead", "qualified", "customer", "churned")


def existing_rows(n: int) -> Iterator[tuple[str, dict[str, Any], Keys]]:
    for i in range(n):
        email = f"user{i}@example.com"
        data = {
            "email": email,
            "job_title": "Engineer",
            "lifecycle_stage": STAGES[i % 4],
            "lead_score": i % 101,
        }
        yield f"User {i}", data, (email_key(email), None, None, None)


def populate(db: Path, n: int) -> float:
    start = time.perf_counter()
    store = Store(db)
    store.bulk_insert(1, existing_rows(n), "2026-01-01T00:00:00.000Z")
    store.close()
    return time.perf_counter() - start


def make_batch(size: int, batch_no: int, rng: random.Random) -> list[dict[str, Any]]:
    objects = []
    for j in range(100):
        if j % 2 == 0:
            email, name = f"new{batch_no}-{j}@example.org", f"Person {batch_no}-{j}"
        else:  # an existing contact comes back with its name and changed fields
            i = rng.randrange(size)
            email, name = f"user{i}@example.com", f"User {i}"
        objects.append(
            {
                "name": name,
                "match_by": "email",
                "match_value": email,
                "fields": {
                    "email": email,
                    "job_title": "Data engineer",
                    "lead_score": j,
                    "lifecycle_stage": STAGES[j % 4],
                    "newsletter_opt_in": j % 3 == 0,
                },
            }
        )
    return objects


def run_size(size: int, batches: int, workdir: Path) -> tuple[float, float, float, dict[str, int]]:
    db = workdir / f"sandbox-{size}.db"
    fill = populate(db, size)
    app = create_app(db, api_key=KEY)
    rng = random.Random(size)
    # bodies are encoded up front: client and server share one process (and its GIL), and
    # this measures the service, not the client's JSON encoder
    payloads = [
        json.dumps({"objects": make_batch(size, b, rng)}).encode() for b in range(batches + 10)
    ]
    headers = {"content-type": "application/json"}
    totals = {"created": 0, "updated": 0, "failed": 0}
    with (
        run_in_thread(app) as base,
        httpx.Client(base_url=base, headers={"x-api-key": KEY}, timeout=60) as http,
    ):
        for payload in payloads[:10]:  # warm-up (connection, caches)
            http.post("/api/objects/contacts/batch", content=payload, headers=headers)
        start, cpu = time.perf_counter(), time.process_time()
        for payload in payloads[10:]:
            r = http.post("/api/objects/contacts/batch", content=payload, headers=headers)
            r.raise_for_status()
            for k in totals:
                totals[k] += r.json()["summary"][k]
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    app.state.store.close()
    return fill, batches * 100 / elapsed, cpu * 1e6 / (batches * 100), totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--batches", type=int, default=500, help="timed batches of 100 per size")
    args = parser.parse_args()
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    sizes = [int(s) for s in args.sizes.split(",")]
    rates: dict[int, float] = {}
    cpus: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-") as tmp:
        for size in sizes:
            fill, rate, cpu_us, totals = run_size(size, args.batches, Path(tmp))
            rates[size], cpus[size] = rate, cpu_us
            print(
                f"{size:>9,} existing contacts: pre-populated in {fill:6.1f} s; "
                f"{rate:8,.0f} rows/s batch upsert, {cpu_us:5.0f} µs CPU/row  "
                f"(created {totals['created']:,}, updated {totals['updated']:,}, "
                f"failed {totals['failed']:,})",
                flush=True,
            )
            (Path(tmp) / f"sandbox-{size}.db").unlink()
    small, large = min(sizes), max(sizes)
    ratio = rates[small] / rates[large]
    print(
        f"cost per row at {large:,} / at {small:,}: {ratio:.2f} wall-clock, "
        f"{cpus[large] / cpus[small]:.2f} CPU  (targets: >= 5,000 rows/s, ratio <= 1.5; "
        f"load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()

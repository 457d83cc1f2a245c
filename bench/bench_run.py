"""Benchmark: a whole recordsync run against a bare httpx loop, into the sandbox over loopback.

    python bench/bench_run.py [--rows 100000] [--repeat 3]

1. Writes ``--rows`` contacts as a CSV in the sample export's format (bench/out is reused when
   present) and a pipeline with the sample contacts mapping.
2. recordsync: ``run_pipeline`` reads the CSV, maps, resolves owners, validates, chunks,
   sends, reconciles and writes the report into a fresh sandbox (``run_in_thread``).
   The sandbox runs in its own process by default (``--server thread``: in this process).
3. bare loop: the same batch inputs, computed beforehand (not timed), posted in the same
   chunks of 100 from one keep-alive ``httpx.Client`` to another fresh sandbox; the loop only
   checks the status code.

Prints rows/s of both and the ratio, per pair of runs (back to back, the order alternating
from pair to pair), then the median of the pairs' ratios and the ratio of the best rates.
Target: recordsync >= 90% of the bare loop's rows/s.

Neither side's timing includes Python importing its modules (process start-up, paid once per
process by a scheduler that calls ``run_pipeline`` and by the CLI alike): the modules that a
run imports on first use (pandas, for the snapshot digests, among them; about 0.5 s) are
imported before the clock starts, as ``httpx`` is for the bare loop.
"""

from __future__ import annotations

import argparse
import csv
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from recordsync.config import load_pipeline
from recordsync.model import RowStatus
from recordsync.prepare import prepare_step
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread
from recordsync.secret import Secret
from recordsync.send.pipeline import RunRequest, run_pipeline
from recordsync.settings import Target

REPO = Path(__file__).resolve().parents[1]
KEY = "sk_live_bench_run"
# the same server settings as recordsync.sandbox.server.run_in_thread, in its own process
SERVE = (
    "import sys, uvicorn; from recordsync.sandbox import create_app; "
    "uvicorn.run(create_app(sys.argv[1], api_key=sys.argv[2]), host='127.0.0.1', "
    "port=int(sys.argv[3]), log_level='warning', access_log=False, lifespan='off')"
)
FIRST = ("Ada", "Ben", "Chloe", "Diego", "Ines", "Omar", "Rosa", "Sven", "Yusuf", "Greta")
LAST = ("Weber", "Costa", "Xu", "Brown", "Jensen", "Nakamura", "Fischer", "Varga")
STAGES = ("Lead", "qualified", "Customer", "churned", "")
OWNERS = ("ada@acme.example", "ben@acme.example", " Chloe@acme.example ", "DIEGO@ACME.EXAMPLE")
TAGS = ("", "VIP", "Partner; Newsletter", "Churn risk")


def write_csv(path: Path, rows: int) -> None:
    rng = random.Random(7)
    header = [
        "First Name",
        "Last Name",
        "Email",
        "Phone",
        "Title",
        "Stage",
        "Score",
        "Newsletter",
        "Last Contacted",
        "Tags",
        "Company Domain",
        "Owner",
        "Signed Up",
    ]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i in range(rows):
            first, last = rng.choice(FIRST), rng.choice(LAST)
            w.writerow(
                [
                    first,
                    last,
                    f"{first.lower()}.{last.lower()}{i}@bench.example",
                    f"+44 20 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
                    "Data Engineer",
                    rng.choice(STAGES),
                    rng.randrange(0, 101),
                    rng.choice(("yes", "no", "")),
                    f"{rng.randrange(1, 28):02d}/0{rng.randrange(1, 9)}/2025",
                    rng.choice(TAGS),
                    "bench.example",
                    rng.choice(OWNERS),
                    f"2025-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)} 10:30",
                ]
            )


def make_project(root: Path, rows: int) -> Path:
    data = root / "data"
    data.mkdir()
    write_csv(data / "contacts.csv", rows)
    configs = root / "configs"
    configs.mkdir()
    mapping = (REPO / "configs" / "contacts.yaml").read_text(encoding="utf-8")
    mapping = mapping.replace("../sample_data/contacts.csv", "../data/contacts.csv")
    (configs / "contacts.yaml").write_text(mapping, encoding="utf-8")
    shutil.copy(REPO / "configs" / "owners.yaml", configs / "owners.yaml")
    pipelines = root / "pipelines"
    pipelines.mkdir()
    (pipelines / "bench.yaml").write_text(
        "name: bench\nsteps:\n  - ../configs/contacts.yaml\nsend:\n  chunk_size: 100\n"
        "  canary_chunk_size: 100\n",
        encoding="utf-8",
    )
    return pipelines / "bench.yaml"


@contextmanager
def sandbox(db: Path, mode: str) -> Iterator[str]:
    """A fresh sandbox over loopback: in a thread of this process, or its own process."""
    if mode == "thread":
        app = create_app(db, api_key=KEY)
        with run_in_thread(app) as url:
            yield url
        app.state.store.close()
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-c", SERVE, str(db), KEY, str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/api/meta/users", headers={"x-api-key": KEY}, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the sandbox process did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def warm_imports() -> None:
    """Import what a run imports lazily (see the module docstring)."""
    import recordsync.prepare.digests
    import recordsync.state.snapshots
    import recordsync.validate.pipeline_check  # noqa: F401


def run_recordsync(
    root: Path, pipeline: Path, tag: str, mode: str, state: bool = True
) -> tuple[float, int]:
    with sandbox(root / f"rs-{tag}.db", mode) as url:
        start = time.perf_counter()
        result = run_pipeline(
            RunRequest(
                pipeline,
                report_dir=root / "reports",
                state=state,
                state_db=root / f"state-{tag}.db",
            ),
            target=Target(url, Secret(KEY), "bench", "bench"),
        )
        elapsed = time.perf_counter() - start
    assert result.summary["accounting_ok"], result.summary["accounting_errors"]
    return elapsed, int(result.summary["totals"]["rows_read"])


def precompute(pipeline: Path) -> list[list[dict[str, object]]]:
    from recordsync.validate.schema import Schema

    app = create_app(pipeline.parent.parent / "schema.db", api_key=KEY)
    with run_in_thread(app) as url, httpx.Client(base_url=url, headers={"x-api-key": KEY}) as c:
        schema_json = c.get("/api/meta/schema").json()["data"]
        users = c.get("/api/meta/users").json()["data"]
    app.state.store.close()
    step = load_pipeline(pipeline).steps[0]
    payloads = [
        r.payload
        for r in prepare_step(
            step.config, base_dir=step.base_dir, schema=Schema.from_api(schema_json), users=users
        )
        if r.status is RowStatus.VALID and r.payload
    ]
    return [payloads[i : i + 100] for i in range(0, len(payloads), 100)]


def run_bare(
    root: Path, chunks: list[list[dict[str, object]]], tag: str, mode: str
) -> tuple[float, int]:
    sent = 0
    with (
        sandbox(root / f"bare-{tag}.db", mode) as url,
        httpx.Client(base_url=url, headers={"x-api-key": KEY}, timeout=60) as client,
    ):
        start = time.perf_counter()
        for chunk in chunks:
            r = client.post("/api/objects/contacts/batch", json={"objects": chunk})
            r.raise_for_status()
            sent += len(chunk)
        elapsed = time.perf_counter() - start
    return elapsed, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="pairs of runs (median and best-of reported)"
    )
    parser.add_argument(
        "--no-state",
        action="store_true",
        help="run recordsync without the state store (no change detection, no journal)",
    )
    parser.add_argument(
        "--server",
        choices=("process", "thread"),
        default="process",
        help="sandbox in its own process (like a real service; default) or in a thread here",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-") as tmp:
        root = Path(tmp)
        pipeline = make_project(root, args.rows)
        chunks = precompute(pipeline)
        warm_imports()
        ratios: list[float] = []
        best = {"recordsync": 0.0, "bare": 0.0}
        for n in range(args.repeat):
            # back to back, the order alternating: a drift of the machine's speed during a
            # pair does not always favour the same side
            order = ("recordsync", "bare") if n % 2 == 0 else ("bare", "recordsync")
            rate: dict[str, float] = {}
            for side in order:
                if side == "recordsync":
                    rs_s, rs_rows = run_recordsync(
                        root, pipeline, str(n), args.server, not args.no_state
                    )
                    rate[side] = rs_rows / rs_s
                    print(
                        f"run {n + 1}: recordsync {rs_rows} rows in {rs_s:.1f} s ="
                        f" {rate[side]:,.0f} rows/s"
                        f" (whole pipeline, state store {'off' if args.no_state else 'on'})"
                    )
                else:
                    bare_s, bare_rows = run_bare(root, chunks, str(n), args.server)
                    rate[side] = bare_rows / bare_s
                    print(
                        f"run {n + 1}: bare loop  {bare_rows} rows in {bare_s:.1f} s ="
                        f" {rate[side]:,.0f} rows/s (precomputed chunks)"
                    )
                best[side] = max(best[side], rate[side])
            ratios.append(rate["recordsync"] / rate["bare"])
            print(f"run {n + 1}: ratio recordsync / bare = {ratios[-1]:.1%} (target >= 90%)")
        if args.repeat > 1:
            print(
                f"{args.repeat} runs: ratios {', '.join(f'{r:.1%}' for r in ratios)};"
                f" median {statistics.median(ratios):.1%}; best recordsync / best bare ="
                f" {best['recordsync']:,.0f} / {best['bare']:,.0f} rows/s ="
                f" {best['recordsync'] / best['bare']:.1%} (target >= 90%)"
            )


if __name__ == "__main__":
    main()

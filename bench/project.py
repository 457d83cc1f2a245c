"""The benchmarks' project: generated contacts, the sample mapping, a sandbox over loopback.

Shared by bench_run.py, bench_startup.py, bench_memory.py and bench_nightly.py.
"""

from __future__ import annotations

import csv
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from recordsync.config import load_pipeline
from recordsync.core.model import RowStatus
from recordsync.prepare import prepare_step
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
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
    # the read-back after each step is off: the no-op server stores nothing to read back,
    # the peers read nothing back, and bench_verify.py measures what it costs
    (pipelines / "bench.yaml").write_text(
        "name: bench\nsteps:\n  - ../configs/contacts.yaml\nsend:\n  chunk_size: 100\n"
        "  canary_chunk_size: 100\nverify: {enabled: false}\n",
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

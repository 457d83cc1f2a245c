"""Benchmark: the client's CPU per row, against a bare httpx loop, with no server at all.

    python bench/bench_cpu.py [--rows 100000] [--repeat 3] [--no-state] [--profile FILE]

Both sides post to an ``httpx.MockTransport`` in this process that answers each batch
"created" (one ``orjson.loads`` of the body, the same for both), so what is measured is the
client's own work: recordsync reads the CSV, maps, validates, hashes, journals, sends,
reconciles and writes the report (``run_pipeline``, state store on unless ``--no-state``);
the bare loop posts the same objects, pre-encoded outside the timing, in the same chunks of
100 from one ``httpx.Client``. The metadata requests (schema, users, the one-record list of
a first run) are answered from copies fetched from a sandbox before the clock starts.

Prints each side's CPU seconds (``time.process_time``: user + sys of this process, every
thread) per run, back to back, the order alternating, then the medians and their ratio.
``--profile FILE`` writes a cProfile of one more recordsync run (main thread only, timed by
the thread's CPU clock, so that waiting for the GIL is not charged to the call that let it go).
Before the ratio, the baseline is checked (as plausible.py does over a socket): every side
must have sent every row, and the bare loop taken at most ``BARE_MAX_MS_PER_REQUEST`` of CPU
a request (0.2-0.3 ms on this machine, quiet): more means the loop does work it should not,
and the ratio would flatter.
The modules a run imports on first use are imported beforehand (bench/project.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project import KEY, make_project, precompute, warm_imports

from recordsync.core.secret import Secret
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.target import Target
from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

BASE = "http://service.invalid"
BARE_MAX_MS_PER_REQUEST = 2.0


def metadata(root: Path) -> dict[str, bytes]:
    """The answers of a fresh sandbox to the requests a first run makes besides batches."""
    app = create_app(root / "meta.db", api_key=KEY)
    out: dict[str, bytes] = {}
    with run_in_thread(app) as url, httpx.Client(base_url=url, headers={"x-api-key": KEY}) as c:
        for path in ("/api/meta/schema", "/api/meta/users"):
            out[path] = c.get(path).content
        out["list"] = c.get("/api/objects/contacts", params={"limit": 1, "offset": 0}).content
    app.state.store.close()
    return out


def handler(meta: dict[str, bytes]) -> Any:
    next_id = [0]

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            n = len(orjson.loads(request.content)["objects"])
            first = next_id[0]
            next_id[0] += n
            results = [{"id": first + i + 1, "status": "created"} for i in range(n)]
            summary = {"total": n, "created": n, "updated": 0, "failed": 0}
            body = orjson.dumps({"results": results, "summary": summary})
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        known = meta.get(request.url.path)
        if known is None:
            known = meta["list"]
        return httpx.Response(200, content=known, headers={"content-type": "application/json"})

    return handle


def run_recordsync(
    root: Path, pipeline: Path, meta: dict[str, bytes], tag: str, state: bool
) -> int:
    http = httpx.Client(transport=httpx.MockTransport(handler(meta)))
    result = run_pipeline(
        RunRequest(
            pipeline, report_dir=root / "reports", state=state, state_db=root / f"s-{tag}.db"
        ),
        http=http,
        target=Target(BASE, Secret(KEY), "bench", "bench"),
    )
    http.close()
    assert result.summary["accounting_ok"], result.summary["accounting_errors"]
    assert result.exit_code == 0, result.exit_code
    return int(result.summary["totals"]["created"])


def run_bare(bodies: list[bytes], meta: dict[str, bytes]) -> int:
    sent = 0
    headers = {"x-api-key": KEY, "content-type": "application/json"}
    with httpx.Client(base_url=BASE, transport=httpx.MockTransport(handler(meta))) as client:
        for body in bodies:
            r = client.post("/api/objects/contacts/batch", content=body, headers=headers)
            r.raise_for_status()
            sent += len(r.json()["results"])
    return sent


def cpu(fn: Any, *args: Any) -> tuple[float, float, float, int]:
    """CPU seconds of the whole process and of this (the main) thread, wall seconds, and
    fn's result."""
    start, main, wall = time.process_time(), time.thread_time(), time.perf_counter()
    n = fn(*args)
    return time.process_time() - start, time.thread_time() - main, time.perf_counter() - wall, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-state", action="store_true")
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recordsync-bench-cpu-") as tmp:
        root = Path(tmp)
        pipeline = make_project(root, args.rows)
        meta = metadata(root)
        bodies = [orjson.dumps({"objects": chunk}) for chunk in precompute(pipeline)]
        warm_imports()
        times: dict[str, list[float]] = {"recordsync": [], "bare": []}
        mains: list[float] = []
        walls: dict[str, list[float]] = {"recordsync": [], "bare": []}
        counted: dict[str, int] = {}
        for n in range(args.repeat):
            order = ("recordsync", "bare") if n % 2 == 0 else ("bare", "recordsync")
            for side in order:
                if side == "recordsync":
                    s, main_s, wall, rows = cpu(
                        run_recordsync, root, pipeline, meta, str(n), not args.no_state
                    )
                    mains.append(main_s)
                else:
                    s, main_s, wall, rows = cpu(run_bare, bodies, meta)
                times[side].append(s)
                walls[side].append(wall)
                counted[f"{side} {n + 1}"] = rows
                print(
                    f"run {n + 1}: {side:10} {rows} rows, CPU {s:.2f} s (main {main_s:.2f} s),"
                    f" wall {wall:.2f} s"
                )
        rs, bare = statistics.median(times["recordsync"]), statistics.median(times["bare"])
        per_request = bare * 1000 / len(bodies)
        if per_request > BARE_MAX_MS_PER_REQUEST or not all(
            n == args.rows for n in counted.values()
        ):
            print(
                f"baseline implausible, no ratio: the bare loop took {per_request:.2f} ms of CPU"
                f" a request (at most {BARE_MAX_MS_PER_REQUEST}), rows sent {counted}"
            )
            sys.exit(2)
        print(
            f"median CPU: recordsync {rs:.2f} s (main thread {statistics.median(mains):.2f} s),"
            f" bare {bare:.2f} s, ratio {rs / bare:.2f}x; median wall: recordsync"
            f" {statistics.median(walls['recordsync']):.2f} s, bare"
            f" {statistics.median(walls['bare']):.2f} s; load average {os.getloadavg()[0]:.1f}"
        )
        if args.profile is not None:
            import cProfile

            # the main thread's CPU time, not the wall clock: a call that lets go of the GIL
            # (zlib, SQLite, Arrow) would otherwise be charged the worker thread's turn
            prof = cProfile.Profile(time.thread_time)
            prof.runcall(run_recordsync, root, pipeline, meta, "p", not args.no_state)
            prof.dump_stats(str(args.profile))


if __name__ == "__main__":
    main()

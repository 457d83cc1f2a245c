"""Benchmark of what a nightly sync leaves on disk: the state store and the report files.

    python bench/bench_footprint.py [--rows 1000000] [--keep DIR] [--server noop|sandbox]

A CSV nightly through the real pipeline (``run_pipeline``, state store on, SQLite) into the
no-op server (bench/noop_server.py; ``--server sandbox`` for the sandbox, far slower): a
first run, an unchanged re-run, then a re-run with 1% of the rows changed (every 100th row
gets a new title). After each run it prints the state store's size on disk (the database
with its WAL, and the snapshot files beside it), in bytes per source row, split by table
(SQLite's ``dbstat``), and the size of that run's report directory, file by file.

Targets: the state store <= 100 MB per million rows (100 bytes a row) after each run; the
1%-changed run's report <= 50 MB for 10M rows (5 MB per million rows).

``--writer-only``: no run; the report writer alone is given a nightly re-run's outcomes of
``--rows`` rows (``--changed``, default 1%, updated in 100-row chunks; the rest found
unchanged, in blocks as the fast path hands them over; ``--changed 1``: a first run, every
row created), and the report directory's size is printed: the report of a 10M-row nightly
without a 10M-row first run.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import sqlite3
import sys
import tempfile
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from noop_server import noop_server, write_meta
from project import KEY, make_project, sandbox

from recordsync.core.model import PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.core.secret import Secret
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.target import Target

TITLE = 4  # "Title" column of project.py's CSV


def tables(db: Path) -> dict[str, int]:
    """Bytes per table and index (SQLite's dbstat), largest first."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            rows = conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
            ).fetchall()
        except sqlite3.OperationalError:  # built without dbstat
            return {}
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    out = {str(name): int(size) for name, size in rows}
    out["(free pages)"] = int(free) * int(page)
    return out


def state_bytes(root: Path) -> dict[str, int]:
    """The state database (with -wal/-shm) and everything beside it that the store keeps
    (snapshot files): path → bytes."""
    out: dict[str, int] = {}
    for path in sorted([*root.glob("state*"), root / "snapshots"]):
        if path.is_file():
            out[path.name] = path.stat().st_size
        elif path.is_dir():
            for inner in sorted(path.rglob("*")):
                if inner.is_file():
                    out[str(inner.relative_to(root))] = inner.stat().st_size
    return out


class PeakSize:
    """The largest size the state store reached while a run went on (sampled every 0.2 s)."""

    def __init__(self, root: Path) -> None:
        self.root, self.peak = root, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with contextlib.suppress(OSError):  # a file went while it was listed
                self.peak = max(self.peak, sum(state_bytes(self.root).values()))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def report_bytes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file()}


def change_one_percent(root: Path) -> int:
    source = root / "data" / "contacts.csv"
    tmp = source.with_suffix(".tmp")
    changed = 0
    with (
        open(source, newline="", encoding="utf-8") as src,
        open(tmp, "w", newline="", encoding="utf-8") as dst,
    ):
        reader, writer = csv.reader(src), csv.writer(dst)
        for line, row in enumerate(reader, start=1):
            if line > 1 and line % 100 == 0:
                row[TITLE] = f"Nightly Engineer {line}"
                changed += 1
            writer.writerow(row)
    tmp.replace(source)
    return changed


def writer_only(root: Path, n: int, share: float) -> None:
    """The report of a nightly re-run of ``n`` rows with ``share`` of them changed (1: a
    first run, every row created), written by the writer alone."""
    start = time.perf_counter()
    writer = ReportWriter(root / "report", dry_run=False)
    tally = StepTally("contacts", "configs/contacts.yaml", "contacts")
    writer.start_step(tally)
    tally.read = n
    block = round(100 / share) - 100  # unchanged rows between two changed chunks of 100
    status = RowStatus.CREATED if share >= 1 else RowStatus.UPDATED
    line = 2
    while line < n + 2:
        rows = min(block, n + 2 - line)
        lines = list(range(line, line + rows))
        writer.record_block(
            tally,
            UnchangedBlock(
                "data/contacts.csv",
                lines,
                None,
                [f"email:user{i}@bench.example" for i in lines],
                ["email"] * rows,
                [f"user{i}@bench.example" for i in lines],
                lines,
            ),
        )
        line += rows
        for i in range(line, min(line + 100, n + 2)):
            email = f"user{i}@bench.example"
            payload = {"name": f"User {i}", "match_by": "email", "match_value": email}
            row = PreparedRow(SourceRow("data/contacts.csv", i, {}), RowStatus.VALID, payload)
            writer.record(tally, row, status, i)
            tally.sent += 1
            line += 1
    summary = writer.finish({"run_id": "writer-only"})
    assert summary["accounting_ok"], summary["accounting_errors"]
    report = report_bytes(root / "report")
    print(
        f"writer only, {n:,} rows ({summary['totals']['created']:,} created,"
        f" {summary['totals']['updated']:,} updated,"
        f" {summary['totals']['rows_unchanged']:,} unchanged): report"
        f" {mb(sum(report.values()))} in {time.perf_counter() - start:.1f} s"
    )
    for name, value in report.items():
        print(f"    report {name:<34} {mb(value):>12}")


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    parser.add_argument("--server", choices=("noop", "sandbox"), default="noop")
    parser.add_argument("--writer-only", action="store_true", help="the report writer alone")
    parser.add_argument(
        "--changed", type=float, default=0.01, help="--writer-only: the share of rows changed"
    )
    args = parser.parse_args()
    n = args.rows
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.writer_only:
        with tempfile.TemporaryDirectory(prefix="recordsync-footprint-") as tmp:
            writer_only(Path(tmp), n, args.changed)
        return
    holder = None
    if args.keep is None:
        holder = tempfile.TemporaryDirectory(prefix="recordsync-footprint-")
        root = Path(holder.name)
    else:
        root = args.keep
        root.mkdir(parents=True, exist_ok=False)
    pipeline = make_project(root, n)
    db = root / "state.db"
    serving: AbstractContextManager[str] = (
        noop_server(write_meta(root / "meta.json"), KEY)
        if args.server == "noop"
        else sandbox(root / "sandbox.db", "process")
    )
    with serving as url:
        for label in ("first run", "unchanged re-run", "1% changed re-run"):
            if label.startswith("1%"):
                print(f"  changed {change_one_percent(root):,} rows")
            start = time.perf_counter()
            peak = PeakSize(root)
            result = run_pipeline(
                RunRequest(pipeline, report_dir=root / "reports", state_db=db),
                target=Target(url, Secret(KEY), "bench", "bench"),
            )
            wall = time.perf_counter() - start
            highest = peak.stop()
            summary = result.summary
            assert summary["accounting_ok"], summary["accounting_errors"]
            totals = summary["totals"]
            state = state_bytes(root)
            size = sum(state.values())
            report = report_bytes(result.report_dir)
            print(
                f"{label}: {wall:.1f} s, exit {result.exit_code}, rows read"
                f" {totals['rows_read']:,}; state {mb(size)} = {size / n:.1f} bytes/row"
                f" (while running: up to {mb(highest)} = {highest / n:.1f} bytes/row);"
                f" report {mb(sum(report.values()))} (load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
            for name, value in state.items():
                print(f"    state  {name:<34} {mb(value):>12}")
            for name, value in tables(db).items():
                print(f"    table  {name:<34} {mb(value):>12} {value / n:8.1f} bytes/row")
            for name, value in report.items():
                print(f"    report {name:<34} {mb(value):>12}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    if holder is not None:
        holder.cleanup()


if __name__ == "__main__":
    main()

"""Benchmark of a nightly sync through the real pipeline: first full run, an unchanged
re-run, and a re-run with 1% of the rows changed, against the sandbox over loopback.

    python bench/bench_nightly.py [--rows 1000000] [--server process|thread] [--state-db URL]

Each run is ``recordsync.send.pipeline.run_pipeline`` with the state store on (read, map,
validate, change detection, journal, HTTP, report), into one sandbox that lives for the three
runs (its own process by default). The source is bench_run.py's contacts CSV with the sample
contacts mapping. Between the second and third run, 1% of the rows that were sent (every
100th) get a new job title in the CSV.

Prints the wall and CPU seconds of each run, the ratio first / unchanged (target >= 20x), and
checks that the 1% run sent exactly the changed rows (by source row) and updated them. What
arrived is read back from the sandbox's database, not taken from the tool's summary: after the
first run every source row is one record, the unchanged re-run changed no record, and after
the 1% run exactly the changed rows' records hold their new title.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arrivals import check_sandbox, records_holding, sandbox_changes, source_emails
from project import KEY, make_project, sandbox

from recordsync.secret import Secret
from recordsync.send.pipeline import RunRequest, run_pipeline
from recordsync.settings import Target
from recordsync.state.location import state_location

TITLE = 4  # "Title" column of bench_run's CSV


def run(root: Path, pipeline: Path, url: str, state_db: str | None) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    db = state_location(state_db) if state_db else root / "state.db"
    result = run_pipeline(
        RunRequest(pipeline, report_dir=root / "reports", state_db=db),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = result.summary
    assert summary["accounting_ok"], summary["accounting_errors"]
    assert result.error is None, result.error
    return wall, cpu, result


def statuses(result: Any) -> dict[int, str]:
    with open(result.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return {int(r["source_row"]): r["status"] for r in csv.DictReader(f)}


def change_one_percent(source: Path, sent_rows: list[int]) -> set[int]:
    """Give every 100th sent row a new title; returns their source rows (CSV line numbers:
    the bench CSV has no embedded newlines, so line = index + 1)."""
    changed = set(sent_rows[::100])
    tmp = source.with_suffix(".tmp")
    with (
        open(source, newline="", encoding="utf-8") as src,
        open(tmp, "w", newline="", encoding="utf-8") as dst,
    ):
        reader, writer = csv.reader(src), csv.writer(dst)
        for line, row in enumerate(reader, start=1):
            if line in changed:
                row[TITLE] = f"Nightly Engineer {line}"
            writer.writerow(row)
    tmp.replace(source)
    return changed


def line(label: str, wall: float, cpu: float, result: Any) -> str:
    t = result.summary["totals"]
    return (
        f"{label:<14} {wall:8.1f} s wall {cpu:8.1f} s CPU   read {t['rows_read']:>9,}"
        f"  sent {t['rows_sent']:>9,}  unchanged {t['rows_unchanged']:>9,}"
        f"  created {t['created']:>9,}  updated {t['updated']:>7,}  chunks {t['chunks']:>6,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one)")
    parser.add_argument("--state-db", help="the state store (default: a file in the work dir)")
    args = parser.parse_args()
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="recordsync-nightly-", dir=args.dir) as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        pipeline = make_project(root, args.rows)
        print(f"source: {args.rows:,} contacts written in {time.perf_counter() - t0:.1f} s")
        source = root / "data" / "contacts.csv"
        db = root / "sandbox.db"
        with sandbox(db, args.server) as url:
            w1, c1, first = run(root, pipeline, url, args.state_db)
            print(line("first run", w1, c1, first), flush=True)
            # what arrived, read back from the sandbox (not the tool's summary)
            check_sandbox(db, source_emails(pipeline), "first run")
            before = sandbox_changes(db)
            w2, c2, second = run(root, pipeline, url, args.state_db)
            print(line("unchanged", w2, c2, second), flush=True)
            arrived_unchanged = sandbox_changes(db) == before
            sent = sorted(r for r, s in statuses(first).items() if s in ("created", "updated"))
            changed = change_one_percent(source, sent)
            w3, c3, third = run(root, pipeline, url, args.state_db)
            print(line("1% changed", w3, c3, third), flush=True)
            arrived_changed = records_holding(db, "Nightly Engineer ")
        skipped = ("unchanged", "invalid", "duplicate")
        sent3 = {r for r, s in statuses(third).items() if s not in skipped}
    t2, t3 = second.summary["totals"], third.summary["totals"]
    print(f"first / unchanged: {w1 / w2:.1f}x wall, {c1 / c2:.1f}x CPU (target >= 20x)")
    ok_unchanged = t2["rows_sent"] == 0 and arrived_unchanged
    ok_changed = sent3 == changed and t3["updated"] == len(changed) and t3["created"] == 0
    ok_changed = ok_changed and arrived_changed == len(changed)
    print("first run: every source row arrived exactly once (read back): True")
    print(f"unchanged re-run sent nothing (no record changed, read back): {ok_unchanged}")
    print(
        f"1% run sent exactly the {len(changed):,} changed rows (all updated): {ok_changed}"
        f" (sent {t3['rows_sent']:,}, updated {t3['updated']:,}, created {t3['created']:,};"
        f" records holding a new title, read back: {arrived_changed:,})"
    )
    if not (ok_unchanged and ok_changed):
        sys.exit(1)


if __name__ == "__main__":
    main()

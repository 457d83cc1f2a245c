"""Benchmark of the state package on a large source (default 1,000,000 rows).

Simulates what the runner does around the network, without the network:

    generate   build the prepared rows only (stands in for read + map; the floor)
    hash       generate + input_hash per row
    first run  classify (all new) + journal begin_chunk + ack_chunk per 100-row chunk
               (the ledger written from the journal as the runner does: a key-sorted slice
               with each acknowledgement, or with --per-chunk-ledger in every
               acknowledgement; fsync on every commit unless --fast), then finish_run
               (folds the rest, drops the per-row journal)
    unchanged  classify every row again: all unchanged, nothing journaled
    1% changed classify; the 1% changed rows are journaled and acknowledged

Target (issue, item 10): the unchanged re-run at least 20x faster than the first run, bound
by reading and hashing. The first run here has no HTTP at all, so the real first run is far
slower than this one and the ratio measured here is a lower bound.

    python bench/bench_state.py [--rows 1000000] [--classify-chunk 1000] [--db PATH] [--fast]
                                [--per-chunk-ledger]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import vm_hwm_mb

from recordsync.core.model import MAX_BATCH, PreparedRow, RowStatus, SourceRow
from recordsync.state import ChangeDetector, ChunkResult, Journal, JournalRow, StateStore
from recordsync.state.hashing import input_hash
from recordsync.tuning import sizes

STAGES = ("lead", "qualified", "customer", "churned")


def rows(n: int, *, changed_every: int = 0, chunk: int = 1000) -> Iterator[list[PreparedRow]]:
    """Prepared contact rows in chunks; every ``changed_every``-th row gets a new score."""
    batch: list[PreparedRow] = []
    for i in range(n):
        email = f"user{i}@example.com"
        score = i % 101
        if changed_every and i % changed_every == 0:
            score = (score + 1) % 101
        payload = {
            "name": f"User {i}",
            "match_by": "email",
            "match_value": email,
            "fields": {
                "email": email,
                "phone": f"+1555{i:07d}",
                "job_title": "Engineer",
                "lifecycle_stage": STAGES[i % 4],
                "lead_score": score,
                "newsletter_opt_in": i % 2 == 0,
                "last_contacted": "2026-11-01",
                "tags": ["vip"] if i % 10 == 0 else [],
            },
        }
        batch.append(
            PreparedRow(
                SourceRow("contacts.csv", i + 2, {}),
                RowStatus.VALID,
                payload,
                "email",
                email,
                email,
            )
        )
        if len(batch) == chunk:
            yield batch
            batch = []
    if batch:
        yield batch


def timed(
    label: str, fn: Callable[[], object], results: dict[str, float], cpu: dict[str, float]
) -> None:
    """Wall time and this process's CPU time (the machine may be shared: CPU time is the
    steadier number)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    fn()
    results[label] = time.perf_counter() - start
    cpu[label] = time.process_time() - start_cpu
    print(f"  {label:<22} {results[label]:8.2f} s wall {cpu[label]:8.2f} s cpu", flush=True)


def send(
    store: StateStore,
    det: ChangeDetector,
    journal: Journal,
    run_id: str,
    batches: Iterator[list[PreparedRow]],
) -> int:
    chunk_no = 0
    sent = 0
    for batch in batches:
        to_send = det.classify(batch).to_send
        for start in range(0, len(to_send), MAX_BATCH):
            part = to_send[start : start + MAX_BATCH]
            chunk_no += 1
            jrows = [JournalRow(t.row.source.source_row, t.row.key, t.input_hash) for t in part]
            journal.begin_chunk(run_id, "contacts", chunk_no, jrows[0].source_row, jrows)
            # the service answers: created, id = source row
            journal.ack_chunk(
                run_id,
                "contacts",
                chunk_no,
                [ChunkResult(r.source_row, "created", r.source_row) for r in jrows],
            )
            sent += len(part)
            if journal.unfolded_rows >= sizes.FOLD_ROWS:  # as the runner does (nightly.hook)
                journal.fold()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classify-chunk", type=int, default=1000)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument(
        "--fast", action="store_true", help="synchronous=NORMAL (no fsync per commit)"
    )
    parser.add_argument(
        "--per-chunk-ledger",
        action="store_true",
        help="write the ledger in every acknowledgement (the old way) instead of folding it"
        " from the journal as the runner does",
    )
    args = parser.parse_args()
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    n, chunk = args.rows, args.classify_chunk
    tmp = tempfile.TemporaryDirectory()
    db = args.db or Path(tmp.name) / "state.db"
    print(
        f"state benchmark: {n:,} rows, classify chunk {chunk}, db {db}, "
        f"{'NORMAL' if args.fast else 'FULL'} sync, {os.cpu_count()} CPUs"
    )
    results: dict[str, float] = {}
    cpu: dict[str, float] = {}
    counts: dict[str, object] = {}

    def generate() -> None:
        for _ in rows(n, chunk=chunk):
            pass

    def hash_only() -> None:
        for batch in rows(n, chunk=chunk):
            for r in batch:
                assert r.payload is not None
                input_hash(r.payload)

    store = StateStore(db, durable=not args.fast)

    def first_run() -> None:
        journal = Journal(store, "bench", defer_ledger=not args.per_chunk_ledger)
        journal.slices = (sizes.FOLD_FROM, sizes.FOLD_SLICE)  # as nightly.hook.open_state
        journal.start_run("run-1")
        det = ChangeDetector(store, "bench", "contacts")
        counts["first_sent"] = send(store, det, journal, "run-1", rows(n, chunk=chunk))
        journal.finish_run("run-1")

    def unchanged() -> None:
        det = ChangeDetector(store, "bench", "contacts")
        for batch in rows(n, chunk=chunk):
            det.classify(batch)
        counts["unchanged_counts"] = dict(det.counts)

    def one_percent() -> None:
        journal = Journal(store, "bench", defer_ledger=not args.per_chunk_ledger)
        journal.slices = (sizes.FOLD_FROM, sizes.FOLD_SLICE)  # as nightly.hook.open_state
        journal.start_run("run-3")
        det = ChangeDetector(store, "bench", "contacts")
        counts["changed_sent"] = send(
            store, det, journal, "run-3", rows(n, changed_every=100, chunk=chunk)
        )
        journal.finish_run("run-3")
        counts["changed_counts"] = dict(det.counts)

    timed("generate rows", generate, results, cpu)
    timed("generate + hash", hash_only, results, cpu)
    timed("first run (record)", first_run, results, cpu)
    timed("unchanged re-run", unchanged, results, cpu)
    timed("1% changed re-run", one_percent, results, cpu)
    store.close()
    size = sum(p.stat().st_size for p in Path(db).parent.glob(Path(db).name + "*"))
    ratio = results["first run (record)"] / results["unchanged re-run"]
    cpu_ratio = cpu["first run (record)"] / cpu["unchanged re-run"]
    print(f"  first run / unchanged  {ratio:8.1f} x wall {cpu_ratio:8.1f} x cpu")
    lookups = cpu["unchanged re-run"] - cpu["generate + hash"]
    print(f"  unchanged - hash       {lookups:8.2f} s cpu (ledger lookups and classification)")
    print(f"  state db size          {size / 1e6:8.1f} MB")
    peak = vm_hwm_mb()
    print(f"  peak RSS               {peak:8.1f} MB")
    print(
        json.dumps(
            {
                "rows": n,
                "seconds": results,
                "cpu_seconds": cpu,
                "ratio": ratio,
                "cpu_ratio": cpu_ratio,
                "counts": counts,
                "db_bytes": size,
                "peak_rss_mb": peak,
            },
            default=str,
        )
    )
    tmp.cleanup()


if __name__ == "__main__":
    main()

"""Benchmark of a nightly sync through the real pipeline: first full run, an unchanged
re-run, a re-run with 1% of the rows changed, and the read+decide rate alone, against the
sandbox over loopback, for a CSV and a Parquet source.

    python bench/bench_nightly.py [--rows 1000000] [--formats csv,parquet]
                                  [--decide-rows 10000000 [--decide-only]]
                                  [--server process|thread] [--state-db URL]
                                  [--tuning cli|none]

Each run is ``recordsync.run.pipeline.run_pipeline`` with the state store on (read, map,
validate, change detection, journal, HTTP, report), into one sandbox per format that lives
for its runs (its own process by default). The source is bench_run.py's contacts CSV (or
the same rows as a Parquet file of strings) with the sample contacts mapping. Between the
second and third run, 1% of the rows that were sent (every 100th) get a new job title.

What the server holds is checked in its database, not taken from the tool's summary: after
the first run one live record per row; the unchanged re-run leaves every record as it was
(count, last id, last update); the 1% run updates exactly the changed rows' records (their
e-mails, their new title) and creates none.

Read+decide: after the unchanged re-run, the step's rows are read and decided against the
snapshot that run left (``prepare_digested``; loading the snapshot included; no report, no
state writes, no start-up), timed alone: rows/s (target >= 1M rows/s). ``--decide-rows N``
also measures it (per format) on an N-row source whose snapshot is built from its own
digests (a first run of 10M rows into the sandbox takes hours on a small machine): the same
code path from the snapshot on; the 1M-row figure both ways tells whether they agree. With
``--state-db`` (e.g. a postgresql:// URL) read+decide is not timed (it reads the snapshot
file). ``--tuning cli`` (the default) turns on the process-wide tweaks the command line turns
on (``recordsync.tuning.enable()``: Arrow's memory pool, the trim after each batch, the paused
garbage collector), so the runs and read+decide cost what they cost a ``recordsync run``;
``none`` leaves them off, as a library user's process has them.
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from arrivals import check_sandbox, source_emails
from project import KEY, make_project, sandbox, warm_imports

from recordsync.config import load_pipeline
from recordsync.core.model import UnchangedBlock
from recordsync.core.secret import Secret
from recordsync.report.rows_file import find_rows_file, open_rows_file
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.plans import build_plans
from recordsync.run.target import Target
from recordsync.state.batch_marks import METADATA_KEY, BatchMarks, span_digests
from recordsync.state.digests import SNAPSHOT_SCHEMA, row_digests
from recordsync.state.snapshot_codec import SNAPSHOT_FILE_SCHEMA, encode
from recordsync.state.snapshots import opened, read_file
from recordsync.tuning import sizes

TITLE = 4  # "Title" column of bench_run's CSV
NEW_TITLE = "Nightly Engineer"


STATE_DB: str | None = None
"""--state-db: the state store (a postgresql:// URL measures the state on PostgreSQL)."""


def run(root: Path, pipeline: Path, url: str) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    db: Any = root / "state.db"
    if STATE_DB:
        from recordsync.state.location import state_location

        db = state_location(STATE_DB)
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
    path = find_rows_file(result.report_dir, "results.csv")  # or results.csv.gz
    assert path is not None, result.report_dir
    with open_rows_file(path) as f:
        return {int(r["source_row"]): r["status"] for r in csv.DictReader(f)}


def to_parquet(root: Path) -> None:
    """The project's CSV as a Parquet file of strings; the mapping reads that instead."""
    source = root / "data" / "contacts.csv"
    names = pcsv.open_csv(source).schema.names
    convert = pcsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()))
    pq.write_table(pcsv.read_csv(source, convert_options=convert), source.with_suffix(".parquet"))
    source.unlink()
    config = root / "configs" / "contacts.yaml"
    text = config.read_text(encoding="utf-8").replace("contacts.csv", "contacts.parquet")
    config.write_text(text, encoding="utf-8")


def change_one_percent(root: Path, sent_rows: list[int], fmt: str) -> dict[int, str]:
    """Give every 100th sent row a new title; returns their source rows (CSV line numbers:
    the bench CSV has no embedded newlines, so line = index + 1; Parquet row numbers) and
    e-mails."""
    wanted = set(sent_rows[::100])
    changed: dict[int, str] = {}
    if fmt == "parquet":
        path = root / "data" / "contacts.parquet"
        table = pq.read_table(path)
        titles, emails = table.column("Title").to_pylist(), table.column("Email").to_pylist()
        for row in wanted:
            titles[row - 1] = f"{NEW_TITLE} {row}"
            changed[row] = emails[row - 1]
        table = table.set_column(TITLE, "Title", pa.array(titles, pa.string()))
        pq.write_table(table, path)
        return changed
    source = root / "data" / "contacts.csv"
    tmp = source.with_suffix(".tmp")
    with (
        open(source, newline="", encoding="utf-8") as src,
        open(tmp, "w", newline="", encoding="utf-8") as dst,
    ):
        reader, writer = csv.reader(src), csv.writer(dst)
        for line, row in enumerate(reader, start=1):
            if line in wanted:
                row[TITLE] = f"{NEW_TITLE} {line}"
                changed[line] = row[2]
            writer.writerow(row)
    tmp.replace(source)
    return changed


def server_state(db: Path) -> tuple[int, int, str]:
    """Live contacts, the last record id and the last update, as the sandbox holds them."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT count(*), max(id), max(updated_at) FROM records WHERE deleted_at IS NULL"
        ).fetchone()
    return int(row[0]), int(row[1] or 0), str(row[2])


def retitled(db: Path, since: str) -> tuple[set[str], int]:
    """E-mails of the records holding a new title, and how many records changed after
    ``since``."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        titled = conn.execute(
            "SELECT email_norm FROM records WHERE deleted_at IS NULL"
            " AND json_extract(data, '$.job_title') LIKE ?",
            (f"{NEW_TITLE} %",),
        ).fetchall()
        later = conn.execute("SELECT count(*) FROM records WHERE updated_at > ?", (since,))
        return {r[0] for r in titled}, int(later.fetchone()[0])


def decide(
    root: Path, pipeline: Path, url: str, own: Path | None = None
) -> tuple[int, float, float]:
    """Read and decide every row of the step against its snapshot (the registered one, else
    the file ``own``; loading it timed too); returns the rows found unchanged, the seconds it
    took and the process's CPU seconds."""
    with httpx.Client(base_url=url, headers={"x-api-key": KEY}) as c:
        schema = c.get("/api/meta/schema").json()["data"]
        users = c.get("/api/meta/users").json()["data"]
    plan = build_plans(load_pipeline(pipeline), schema, users)[0]
    fp = plan.fingerprint() if plan.fingerprint is not None else None
    assert fp is not None and plan.digested is not None
    start, cpu = time.perf_counter(), time.process_time()
    if own is not None:
        snap = read_file(own)  # memory-mapped, as a run reads its snapshot
    else:
        with sqlite3.connect(root / "state.db") as conn:
            file, saved = conn.execute("SELECT file, fingerprint FROM snapshots").fetchone()
        assert bytes(saved) == fp, "the snapshot's fingerprint is not the run's"
        registered = root / "snapshots" / file
        plain = opened(registered)  # decompressed beside it, as a run takes it
        snap = read_file(plain)
        if plain != registered:
            plain.unlink()
    unchanged = other = 0
    for item in plan.digested(snap, fp, None, None):
        if type(item) is UnchangedBlock:
            unchanged += len(item)
        else:
            other += 1
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert other == 0, f"{other} rows not found unchanged"
    return unchanged, seconds, cpu


def own_snapshot(root: Path, pipeline: Path, url: str) -> Path:
    """A snapshot file of the source built from its own digests, its batches marked (as a first
    run leaves one)."""
    with httpx.Client(base_url=url, headers={"x-api-key": KEY}) as c:
        schema = c.get("/api/meta/schema").json()["data"]
        users = c.get("/api/meta/users").json()["data"]
    step = load_pipeline(pipeline).steps[0]
    plan = build_plans(load_pipeline(pipeline), schema, users)[0]
    fp = plan.fingerprint() if plan.fingerprint is not None else None
    assert fp is not None
    from recordsync.map.engine import BatchMapper
    from recordsync.read import iter_source

    used = BatchMapper(step.config, base_dir=step.base_dir, schema=None, users=None).columns_used
    path = root / "own-snapshot.arrow"
    done = 0
    marks = BatchMarks()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, SNAPSHOT_FILE_SCHEMA) as out:
        for sb in iter_source(step.config.source, step.base_dir):
            got = row_digests(sb.batch, used, fp)
            assert got is not None and got[1].all()
            marks.add_spans(
                span_digests(sb.batch, used, fp, sizes.MARK_ROWS), sizes.MARK_ROWS, *got
            )
            emails, n = sb.batch.column("Email"), sb.batch.num_rows
            cols = [pa.array(got[0][:, 0]), pa.array(got[0][:, 1])]
            cols += [pc.binary_join_element_wise("email:", emails, ""), pa.nulls(n, pa.string())]
            cols += [emails, pa.array(range(done + 1, done + n + 1), pa.int64())]
            out.write_batch(encode(pa.record_batch(cols, schema=SNAPSHOT_SCHEMA)))
            done += n
        empty = pa.RecordBatch.from_pylist([], schema=SNAPSHOT_FILE_SCHEMA)
        out.write_batch(empty, custom_metadata={METADATA_KEY: marks.encode()})
    return path


def line(label: str, wall: float, cpu: float, result: Any) -> str:
    t = result.summary["totals"]
    return (
        f"{label:<14} {wall:8.1f} s wall {cpu:8.1f} s CPU   read {t['rows_read']:>9,}"
        f"  sent {t['rows_sent']:>9,}  unchanged {t['rows_unchanged']:>9,}"
        f"  created {t['created']:>9,}  updated {t['updated']:>7,}  chunks {t['chunks']:>6,}"
    )


def nightly(root: Path, rows: int, fmt: str, server: str) -> bool:
    pipeline = make_project(root, rows)
    emails = source_emails(pipeline)
    if fmt == "parquet":
        to_parquet(root)
    db = root / "sandbox.db"
    with sandbox(db, server) as url:
        w1, c1, first = run(root, pipeline, url)
        print(line(f"{fmt} first", w1, c1, first), flush=True)
        check_sandbox(db, emails, f"{fmt} first run")  # every row's e-mail exactly once
        after_first = server_state(db)
        w2, c2, second = run(root, pipeline, url)
        print(line(f"{fmt} unchanged", w2, c2, second), flush=True)
        after_second = server_state(db)
        if STATE_DB is None:  # the snapshot the unchanged run left is read from its file
            n, secs, _ = decide(root, pipeline, url)
            print(f"{fmt} read+decide  {n:,} rows in {secs:.2f} s = {n / secs:,.0f} rows/s")
        n2, secs2, _ = decide(root, pipeline, url, own_snapshot(root, pipeline, url))
        print(f"{fmt} the same, snapshot built from the source's digests: {n2 / secs2:,.0f} rows/s")
        sent = sorted(r for r, s in statuses(first).items() if s in ("created", "updated"))
        changed = change_one_percent(root, sent, fmt)
        w3, c3, third = run(root, pipeline, url)
        print(line(f"{fmt} 1% changed", w3, c3, third), flush=True)
        titled, later = retitled(db, after_second[2])
        after_third = server_state(db)
    print(f"{fmt} first / unchanged: {w1 / w2:.1f}x wall, {c1 / c2:.1f}x CPU (target >= 20x)")
    checks = {
        "first run: one live record per row, each e-mail once": after_first[0] == rows,
        "unchanged re-run: every record as it was": after_second == after_first,
        "1% run: the changed rows' records hold the new title, no other": titled
        == {e.lower() for e in changed.values()},
        "1% run: exactly that many records updated, none created": later == len(changed)
        and after_third[:2] == after_first[:2],
    }
    for label, ok in checks.items():
        print(f"{fmt} check ({len(changed):,} rows changed): {label}: {ok}")
    return all(checks.values())


def decide_only(root: Path, rows: int, formats: list[str], server: str) -> None:
    t0 = time.perf_counter()
    pipeline = make_project(root, rows)
    print(f"decide-only: {rows:,} rows written in {time.perf_counter() - t0:.0f} s", flush=True)
    with sandbox(root / "sandbox.db", server) as url:
        for fmt in formats:
            if fmt == "parquet":
                to_parquet(root)
            own = own_snapshot(root, pipeline, url)
            n, secs, cpu = decide(root, pipeline, url, own)
            print(
                f"{fmt} read+decide ({rows:,} rows, own snapshot) in {secs:.2f} s (CPU"
                f" {cpu:.2f} s) = {n / secs:,.0f} rows/s; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--formats", default="csv,parquet")
    parser.add_argument("--decide-rows", type=int, default=0, help="also: read+decide alone")
    parser.add_argument("--decide-only", action="store_true", help="only --decide-rows")
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one)")
    parser.add_argument("--state-db", help="the state store (default: a file in the work dir)")
    parser.add_argument("--tuning", choices=("cli", "none"), default="cli")
    args = parser.parse_args()
    if args.tuning == "cli":
        from recordsync import tuning

        tuning.enable()
    global STATE_DB
    STATE_DB = args.state_db
    warm_imports()
    print(f"load average at start: {os.getloadavg()[0]:.1f}; tuning: {args.tuning}")
    ok = True
    formats = args.formats.split(",")
    for fmt in [] if args.decide_only else formats:
        with tempfile.TemporaryDirectory(prefix="recordsync-nightly-", dir=args.dir) as tmp:
            ok &= nightly(Path(tmp), args.rows, fmt, args.server)
    if args.decide_rows:
        with tempfile.TemporaryDirectory(prefix="recordsync-decide-", dir=args.dir) as tmp:
            decide_only(Path(tmp), args.decide_rows, formats, args.server)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The floor: the least a client can do for recordsync's contract, in one CPython process.

    python bench/floor_loop.py URL API_KEY CSV STATE_DB RESULTS_CSV
    python bench/floor_loop.py --dump OUT.jsonl URL API_KEY CSV   # the payloads, no sending

Not a tool: a yardstick for issue 14's client-CPU target. It does, as cheaply as this author
could write it, what a ``recordsync run`` of the benchmark's contacts pipeline must do with the
state store on, and nothing else:

- fetch the schema and the users (owner e-mails to ids), as a run does;
- read the key column once for the duplicate check (as recordsync's scan does), then stream
  the CSV in 1 MiB blocks with pyarrow's reader: map and check every column with Arrow
  compute kernels (trim, lower-case, dates, the time zone, tags, owners, the e-mail check,
  duplicates), then make one payload dict a row, leaving out empty values;
- per chunk of 100: the input hash of each row (BLAKE2b of its sorted ``name`` and
  ``fields``), the request body (one ``orjson.dumps``), the chunk journaled and committed
  (WAL, ``synchronous=NORMAL``) before it is sent;
- one request at a time from one keep-alive ``httpx.Client`` on a worker thread, the next
  chunk prepared while one is in flight; the answer parsed, every entry checked;
- the acknowledgement (the chunk's outcomes) committed in the same transaction as the next
  chunk's journal entry; one ``results.csv`` line a row; the ledger (every row's key, record
  id, input hash and status) upserted once at the end, sorted by key.

It leaves out what recordsync does besides (the report's other files, merge and claim checks,
retries and breakers, resume, the snapshot for the next run's unchanged check, progress;
its ledger rows and duplicate set stay in memory). So its time is a floor for a
single-process client, not a target: ``bench_run.py --floor`` prints bare / floor beside
bare / recordsync. ``--dump`` writes the payloads it would send, one a line, for the benchmark
to compare with recordsync's own (they must be equal) before anything is timed.
"""

from __future__ import annotations

import csv
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from hashlib import blake2b
from importlib.abc import MetaPathFinder
from types import ModuleType
from typing import Any


class _NoPandas(MetaPathFinder):
    """pyarrow imports pandas (0.2 s, 60 MB) on its first type check unless the import
    fails; recordsync makes it fail the same way (recordsync/cli/startup.py)."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None):  # type: ignore[no-untyped-def]
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas in the floor")
        return None


sys.meta_path.insert(0, _NoPandas())

import httpx  # noqa: E402
import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402

CHUNK = 100
EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
KEYS = (
    "email",
    "phone",
    "job_title",
    "lifecycle_stage",
    "lead_score",
    "newsletter_opt_in",
    "last_contacted",
    "tags",
    "signed_up_at",
    "owned_by_user_id",
)
SCHEMA = """
CREATE TABLE chunks (chunk_no INTEGER PRIMARY KEY, rows TEXT, outcomes TEXT, state TEXT);
CREATE TABLE ledger (source_key TEXT PRIMARY KEY, record_id INTEGER, input_hash TEXT,
                     last_status TEXT) WITHOUT ROWID;
"""
UPSERT = (
    "INSERT INTO ledger VALUES (?, ?, ?, ?) ON CONFLICT (source_key) DO UPDATE SET"
    " record_id = excluded.record_id, input_hash = excluded.input_hash,"
    " last_status = excluded.last_status"
)


def _text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Trimmed; empty cells null."""
    trimmed = pc.utf8_trim_whitespace(col)
    return pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)


def _columns(table: pa.Table, owners: dict[str, str], repeated: pa.Array) -> tuple[list[Any], ...]:
    """The name, the key and every field as Python lists (None: left out), and a list of
    problems (None: the row is valid)."""
    first, last = _text(table["First Name"]), _text(table["Last Name"])
    name = pc.utf8_trim_whitespace(
        pc.binary_join_element_wise(pc.fill_null(first, ""), pc.fill_null(last, ""), " ")
    )
    email = pc.utf8_lower(_text(table["Email"]))
    stage = pc.utf8_lower(_text(table["Stage"]))
    score = pc.cast(_text(table["Score"]), pa.int64())
    news = pc.utf8_lower(_text(table["Newsletter"]))
    newsletter = pc.if_else(
        pc.is_in(news, pa.array(["yes", "y", "true", "1"])),
        True,
        pc.if_else(pc.is_in(news, pa.array(["no", "n", "false", "0"])), False, None),
    )
    contacted = pc.strftime(
        pc.strptime(_text(table["Last Contacted"]), "%d/%m/%Y", "s"), "%Y-%m-%d"
    )
    tags_split = pc.split_pattern(pc.fill_null(table["Tags"], ""), ";")
    tags = []
    for chunk in tags_split.chunks:  # trim, lower and slug every item; drop empty ones
        items = pc.utf8_lower(pc.utf8_trim_whitespace(chunk.flatten()))
        items = pc.replace_substring(items, " ", "-")  # labels to the schema's values
        parents = pc.list_parent_indices(chunk)
        kept = pc.not_equal(items, "")
        items, parents = items.filter(kept), parents.filter(kept)
        grouped = pa.table({"p": parents, "t": items}).group_by("p", use_threads=False)
        lists = grouped.aggregate([("t", "list")])
        by_row: list[Any] = [None] * len(chunk)
        for p, t in zip(lists["p"].to_pylist(), lists["t_list"].to_pylist(), strict=True):
            by_row[p] = t
        tags.extend(by_row)
    signed = pc.strptime(_text(table["Signed Up"]), "%Y-%m-%d %H:%M", "s")
    signed = pc.strftime(
        pc.assume_timezone(signed, "Europe/Berlin").cast(pa.timestamp("s", "UTC")),
        "%Y-%m-%dT%H:%M:%SZ",
        "C",
    )
    owner_email = pc.utf8_lower(_text(table["Owner"]))
    emails = pa.array(list(owners))
    owner_id = pc.take(pa.array(list(owners.values())), pc.index_in(owner_email, emails))
    bad_email = pc.invert(pc.fill_null(pc.match_substring_regex(email, EMAIL), False))
    unknown_owner = pc.and_(pc.is_valid(owner_email), pc.is_null(owner_id))
    duplicate = pc.is_in(email, repeated)
    problem = pc.if_else(
        bad_email,
        "invalid e-mail",
        pc.if_else(unknown_owner, "unknown owner", pc.if_else(duplicate, "duplicate", None)),
    )
    fields = (
        email.to_pylist(),
        _text(table["Phone"]).to_pylist(),
        _text(table["Title"]).to_pylist(),
        stage.to_pylist(),
        score.to_pylist(),
        newsletter.to_pylist(),
        contacted.to_pylist(),
        tags,
        signed.to_pylist(),
        owner_id.to_pylist(),
    )
    return name.to_pylist(), email.to_pylist(), problem.to_pylist(), *fields


def _repeated(path: str) -> pa.Array:
    """The e-mails (trimmed, lower-cased) on more than one row: a first pass over that column
    only, as recordsync's duplicate scan makes before it sends."""
    only = pacsv.ConvertOptions(column_types={"Email": pa.string()}, include_columns=["Email"])
    email = pc.utf8_lower(_text(pacsv.read_csv(path, convert_options=only)["Email"]))
    counts = pc.value_counts(email)
    return counts.filter(pc.greater(counts.field("counts"), 1)).field("values")


def payloads(
    path: str, owners: dict[str, str]
) -> Iterator[tuple[list[dict[str, Any]], list[int], int]]:
    """Per block of the file (pyarrow's streaming reader, 1 MiB blocks): the valid rows'
    payloads, their source rows (1 = the first data row), and the block's row count."""
    with open(path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    repeated = _repeated(path)
    convert = pacsv.ConvertOptions(column_types=dict.fromkeys(header, pa.string()))
    reader = pacsv.open_csv(
        path, read_options=pacsv.ReadOptions(block_size=1 << 20), convert_options=convert
    )
    start = 1
    for batch in reader:
        names, keys, problems, *fields = _columns(pa.Table.from_batches([batch]), owners, repeated)
        out: list[dict[str, Any]] = []
        rows: list[int] = []
        for n, (name, key, problem, *values) in enumerate(
            zip(names, keys, problems, *fields, strict=True), start=start
        ):
            if problem is not None:
                continue
            f = {k: v for k, v in zip(KEYS, values, strict=True) if v is not None}
            out.append({"name": name, "match_by": "email", "match_value": key, "fields": f})
            rows.append(n)
        start += len(names)
        yield out, rows, len(names)


def _chunks(
    blocks: Iterator[tuple[list[dict[str, Any]], list[int], int]], counts: list[int]
) -> Iterator[tuple[list[dict[str, Any]], list[int]]]:
    """Chunks of at most 100 valid rows, in source order; ``counts``: [rows read, rows valid]."""
    objects: list[dict[str, Any]] = []
    rows: list[int] = []
    for out, source_rows, n in blocks:
        counts[0] += n
        counts[1] += len(out)
        objects += out
        rows += source_rows
        while len(objects) >= CHUNK:
            yield objects[:CHUNK], rows[:CHUNK]
            del objects[:CHUNK], rows[:CHUNK]
    if objects:
        yield objects, rows


def _send(client: httpx.Client, body: bytes, n: int) -> list[dict[str, Any]]:
    answer = client.post("/api/objects/contacts/batch", content=body)
    answer.raise_for_status()
    results: list[dict[str, Any]] = orjson.loads(answer.content)["results"]
    if len(results) != n:
        raise RuntimeError(f"{len(results)} results for {n} entries")
    return results


def run(url: str, key: str, csv_path: str, state_db: str, results_csv: str) -> int:
    headers = {"x-api-key": key, "content-type": "application/json"}
    client = httpx.Client(base_url=url, headers=headers, timeout=60)
    client.get("/api/meta/schema").raise_for_status()
    users = client.get("/api/meta/users").json()["data"]
    owners = {u["email"].lower(): u["id"] for u in users if u.get("email")}
    counts = [0, 0]  # rows read, rows valid
    chunks = _chunks(payloads(csv_path, owners), counts)
    db = sqlite3.connect(state_db, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    # no checkpoint at a commit (it syncs the file): once, at the end (recordsync checkpoints
    # on a thread of its own)
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.executescript(SCHEMA)
    with open(results_csv, "w", encoding="utf-8", newline="") as report:
        report.write("source_row,match_by,match_value,status,record_id,error\r\n")
        failed = _loop(client, db, report, chunks)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    client.close()
    return 0 if failed == 0 and counts[0] == counts[1] else 1


def _hash(payload: dict[str, Any]) -> str:
    canonical = orjson.dumps(
        {"fields": payload["fields"], "name": payload["name"]}, option=orjson.OPT_SORT_KEYS
    )
    return blake2b(canonical, digest_size=16).hexdigest()


def _loop(
    client: httpx.Client,
    db: sqlite3.Connection,
    report: Any,
    chunks: Iterator[tuple[list[dict[str, Any]], list[int]]],
) -> int:
    """Journal, send, acknowledge and report every chunk; returns the rows not created."""
    pool = ThreadPoolExecutor(1)
    ledger: list[tuple[str, Any, str, str]] = []
    in_flight: tuple[int, list[Any], list[tuple[int, str, str]], Future[Any]] | None = None
    failed = 0

    def settle(pending: tuple[int, list[Any], list[tuple[int, str, str]], Future[Any]]) -> Any:
        chunk_no, _, journaled, future = pending
        results = future.result()
        db.execute(
            "UPDATE chunks SET outcomes = ?, state = 'acked' WHERE chunk_no = ?",
            (orjson.dumps([[r["status"], r.get("id")] for r in results]).decode(), chunk_no),
        )
        ledger.extend(
            (k, r.get("id"), h, r["status"])
            for (_, k, h), r in zip(journaled, results, strict=True)
        )
        return results

    def write_report(journaled: list[tuple[int, str, str]], results: list[Any]) -> int:
        bad = 0
        lines = []
        for (row, k, _), r in zip(journaled, results, strict=True):
            status = r["status"]
            bad += status not in ("created", "updated")
            lines.append(f"{row},email,{k},{status},{r.get('id', '')},{r.get('error') or ''}\r\n")
        report.write("".join(lines))
        return bad

    for chunk_no, (chunk, rows) in enumerate(chunks, start=1):
        journaled = [(row, p["match_value"], _hash(p)) for row, p in zip(rows, chunk, strict=True)]
        body = orjson.dumps({"objects": chunk})
        previous, results = in_flight, None
        db.execute("BEGIN IMMEDIATE")
        if previous is not None:
            results = settle(previous)
        db.execute(
            "INSERT INTO chunks VALUES (?, ?, NULL, 'begun')",
            (chunk_no, orjson.dumps(journaled).decode()),
        )
        db.execute("COMMIT")
        in_flight = (chunk_no, chunk, journaled, pool.submit(_send, client, body, len(chunk)))
        if previous is not None:
            failed += write_report(previous[2], results)
    if in_flight is not None:
        db.execute("BEGIN IMMEDIATE")
        results = settle(in_flight)
        db.execute("COMMIT")
        failed += write_report(in_flight[2], results)
    pool.shutdown()
    # the ledger once, in key order, each page written once (the journal holds every outcome
    # meanwhile, as with recordsync's deferred ledger fold)
    ledger.sort()
    db.execute("BEGIN IMMEDIATE")
    db.executemany(UPSERT, ledger)
    db.execute("COMMIT")
    return failed


def main() -> None:
    if sys.argv[1] == "--dump":
        out, url, key, csv_path = sys.argv[2:6]
        with httpx.Client(base_url=url, headers={"x-api-key": key}) as client:
            users = client.get("/api/meta/users").json()["data"]
        owners = {u["email"].lower(): u["id"] for u in users if u.get("email")}
        with open(out, "wb") as f:
            for objects, _, _ in payloads(csv_path, owners):
                f.writelines(orjson.dumps(p) + b"\n" for p in objects)
        return
    sys.exit(run(*sys.argv[1:6]))


if __name__ == "__main__":
    main()

"""Acceptance: the never-seen leads CSV against a misbehaving sandbox (503s, 429s, answers
lost after the batch was applied). Every row is accounted for, no record is created twice,
and `retry` sends what the faults kept from going out."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .support import all_records, recordsync, report_dirs, results, sandbox, summary, write_leads

VALID_LEADS = 52  # 60 rows - 7 invalid - 1 duplicate (see support.BAD_LINES)


def test_transient_faults_lose_no_row_and_duplicate_nothing(tmp_path: Path) -> None:
    pipeline = write_leads(tmp_path)
    faults = [
        "503:every=3:path=/batch",
        "429:every=4:retry_after=1:path=/batch",
        "drop-after-apply:every=5:path=/batch",
    ]
    with sandbox(tmp_path / "sb.db", faults=faults) as url:
        done = recordsync("run", pipeline, "--base-url", url, cwd=tmp_path)
        stored = all_records(url, "contacts")
    assert done.code == 1, done.err  # only the invalid rows are not ok
    # the faults did hit: a chunk saw 503s, another lost its answer after being applied
    assert "HTTP 503" in done.err and "RemoteProtocolError" in done.err, done.err
    (report,) = report_dirs(tmp_path / "reports")
    s = summary(report)
    assert s["accounting_ok"] is True, s["accounting_errors"]
    (step,) = s["steps"]
    assert step["rows_read"] == 60 and step["rows_sent"] == VALID_LEADS
    assert (step["failed"], step["in_doubt"], step["unreconciled_chunks"]) == (0, 0, 0)
    assert step["created"] + step["updated"] == VALID_LEADS

    rows = results(report)
    assert len(rows) == 60
    statuses = Counter(r["status"] for r in rows)
    assert statuses["invalid"] == 7 and statuses["duplicate"] == 1
    assert statuses["created"] + statuses["updated"] == VALID_LEADS
    # exactly one record per valid row, each row on its own record, no duplicate e-mails
    assert len(stored) == VALID_LEADS
    assert len({r["email"] for r in stored}) == VALID_LEADS
    ids = [r["record_id"] for r in rows if r["status"] in ("created", "updated")]
    assert sorted(ids, key=int) == sorted((str(r["id"]) for r in stored), key=int)


def test_retry_sends_the_rows_an_outage_kept_back(tmp_path: Path) -> None:
    pipeline = write_leads(tmp_path)
    db = tmp_path / "sb.db"
    # the first two batches go through, then the service answers 503 to every batch
    with sandbox(db, faults=["503:path=/batch:after=2"]) as url:
        done = recordsync(
            "run", pipeline, "--base-url", url, "--max-failure-rate", "0.2", cwd=tmp_path
        )
        landed = len(all_records(url, "contacts"))
    assert done.code == 3, done.err  # the breaker stopped the run
    assert "circuit breaker" in done.err and "max_failure_rate" in done.err
    (first,) = report_dirs(tmp_path / "reports")
    (step,) = summary(first)["steps"]
    assert summary(first)["accounting_ok"] is True
    # every valid row was sent or, once the breaker stopped the run, reported not sent
    assert step["rows_sent"] + step["not_sent"] == VALID_LEADS and step["in_doubt"] == 0
    assert step["created"] == landed == 25  # canary of 5 + one chunk of 20
    assert step["failed"] == VALID_LEADS - 25 and step["not_sent"] > 0
    failed_rows = {r["source_row"] for r in results(first) if r["status"] == "failed"}
    assert len(failed_rows) == VALID_LEADS - 25

    with sandbox(db) as url:  # the service is back
        again = recordsync("retry", first, "--base-url", url, cwd=tmp_path)
        stored = all_records(url, "contacts")
    assert again.code == 0, again.err
    retry_dir = next(d for d in report_dirs(tmp_path / "reports") if d != first)
    (step,) = summary(retry_dir)["steps"]
    assert (step["rows_read"], step["created"], step["failed"]) == (VALID_LEADS - 25,) * 2 + (0,)
    assert {r["source_row"] for r in results(retry_dir)} == failed_rows
    assert len(stored) == VALID_LEADS and len({r["email"] for r in stored}) == VALID_LEADS

"""The sample nightly pipeline over loopback: the report equals what the sandbox holds; retry."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

from recordsync.core.errors import RunAborted
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.retry import retry_report
from recordsync.send.retry import RetryPolicy

from .support import KEY, REPO, all_records, served, target

PIPELINE = REPO / "pipelines" / "nightly.yaml"


def request(tmp_path: Path, **kw: object) -> RunRequest:
    return RunRequest(
        PIPELINE,
        report_dir=tmp_path / "reports",
        state_db=tmp_path / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **kw,
    )  # type: ignore[arg-type]


def results(report_dir: Path) -> list[dict[str, str]]:
    with open(report_dir / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_report_numbers_equal_what_the_sandbox_holds(tmp_path: Path) -> None:
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path), target=target(url))
        held = {
            s["object_type"]: all_records(url, s["object_type"]) for s in result.summary["steps"]
        }
    assert result.summary["accounting_ok"]
    lines = results(result.report_dir)
    for step in result.summary["steps"]:
        records = held[step["object_type"]]
        assert step["created"] == len(records)  # fresh sandbox: every record is one of ours
        ids = {int(r["record_id"]) for r in lines if r["step"] == step["step"] and r["record_id"]}
        assert ids == {r["id"] for r in records}
        assert step["rows_read"] == sum(1 for r in lines if r["step"] == step["step"])
    summary = json.loads((result.report_dir / "summary.json").read_text())
    assert summary["target"] == url and KEY not in json.dumps(summary)
    assert summary["pipeline"] == "nightly"


def test_dry_run_of_the_nightly_pipeline_writes_nothing(tmp_path: Path) -> None:
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, dry_run=True), target=target(url))
        assert all(not all_records(url, t) for t in ("contacts", "companies", "deals"))
    assert result.summary["dry_run"] is True
    assert result.summary["totals"]["rows_sent"] > 0
    assert {r["status"] for r in results(result.report_dir)} <= {"valid", "invalid", "duplicate"}


def test_a_run_stopped_by_failures_is_completed_by_retry(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with served(db) as url:
        clean = run_pipeline(request(tmp_path / "clean"), target=target(url))
    expected = {s["object_type"]: s["created"] for s in clean.summary["steps"]}
    db2 = tmp_path / "s2.db"
    with served(db2, ["status:503:path=/batch:after=3"]) as url:
        broken = run_pipeline(request(tmp_path), target=target(url))
    assert isinstance(broken.error, RunAborted) and broken.exit_code == 3
    assert broken.summary["accounting_ok"]
    assert broken.summary["totals"]["not_sent"] > 0
    with served(db2) as url:
        retried = retry_report(broken.report_dir, request(tmp_path), target=target(url))
        held = {t: all_records(url, t) for t in expected}
    assert retried.summary["retry_of"] == broken.summary["run_id"]
    assert retried.error is None and retried.summary["accounting_ok"]
    assert retried.summary["totals"]["failed"] == 0
    # the same records as a clean run, each once
    for object_type, count in expected.items():
        names = Counter(r["name"] for r in held[object_type])
        assert len(held[object_type]) == count, object_type
        assert max(names.values()) == 1 or object_type == "contacts"
    # results of the retry point at the original source rows
    lines = results(retried.report_dir)
    assert lines and all(not r["source_file"].endswith("-retry.csv") for r in lines)

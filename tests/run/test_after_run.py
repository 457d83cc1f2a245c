"""``after_run: {skill: ...}`` against the real sandbox over loopback: the skill webhook is
triggered, signed, with the run's summary when the outcome asks for it; a trigger the service
refuses is a visible warning that leaves the exit code alone; the API key shows nowhere."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import KEY, loopback_client, served, target

from recordsync.report.tally import StepTally
from recordsync.run.after_run import MAX_BODY, MAX_REASON, TOP_FAILURES, encode, skill_payload
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.written import MAX_CHANGED_IDS
from recordsync.send.retry import RetryPolicy

LIVE = "00000000-0000-4000-8000-000000000001"
PAUSED = "00000000-0000-4000-8000-000000000002"
UNKNOWN = "00000000-0000-4000-8000-0000000000ff"


def write_pipeline(
    tmp: Path, skill: str, when: str, *, bad_rows: int = 1, good_rows: int = 4
) -> Path:
    rows = [f"Person {i},person.{i}@example.com\n" for i in range(good_rows)]
    rows += [f"Broken {i},not-an-email\n" for i in range(bad_rows)]
    (tmp / "people.csv").write_text("Name,Email\n" + "".join(rows), encoding="utf-8")
    (tmp / "contacts.yaml").write_text(
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [name]\n"
        "fields:\n  email: Email\n",
        encoding="utf-8",
    )
    path = tmp / "pipe.yaml"
    path.write_text(
        "name: skilled\nsteps: [contacts.yaml]\n"
        f"after_run:\n  skill: {{id: {skill}, when: {when}}}\n",
        encoding="utf-8",
    )
    return path


def request(tmp: Path, pipeline: Path) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
    )


def skill_runs(url: str) -> list[dict[str, Any]]:
    with loopback_client(url) as client:
        runs = client.request("GET", "/api/sandbox/skill-runs")["data"]
    return list(runs)


def test_rows_not_ok_triggers_the_skill_with_the_signed_summary(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, LIVE, "[rows_not_ok]")
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        (run,) = skill_runs(url)
    assert result.exit_code == 1
    done = result.summary["after_run"]["skill"]
    assert done["triggered"] is True and done["skill_run_id"] == run["id"]
    assert run["skill_id"] == LIVE and run["signed"] is True  # the sandbox checked it
    payload = run["payload"]
    assert payload["event"] == "recordsync.run.finished"
    assert payload["run_id"] == result.summary["run_id"] and payload["pipeline"] == "skilled"
    assert payload["outcome"] == "rows_not_ok" and payload["exit_code"] == 1
    assert payload["totals"] == result.summary["totals"]
    assert (
        payload["top_failures"][0]["rows"] == 1 and "email" in payload["top_failures"][0]["reason"]
    )
    with open(result.report_dir / "results.csv", newline="") as f:
        created = [int(r["record_id"]) for r in csv.DictReader(f) if r["status"] == "created"]
    (ids,) = payload["changed_records"]
    assert ids["object_type"] == "contacts" and ids["created"] == created and ids["updated"] == []
    assert payload["changed_records_truncated"] is False
    assert done["payload_bytes"] == len(encode(payload))
    # the report on disk says so too
    summary = json.loads((result.report_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["after_run"]["skill"]["skill_run_id"] == run["id"]
    report = (result.report_dir / "report.md").read_text(encoding="utf-8")
    assert f"skill {LIVE} (when: rows_not_ok): triggered" in report


def test_an_outcome_not_listed_triggers_nothing(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, LIVE, "[failed]", bad_rows=0)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert skill_runs(url) == []
    assert result.exit_code == 0
    skill = result.summary["after_run"]["skill"]
    assert skill["triggered"] is False and skill["skipped"] == "the run's outcome is ok"


def test_a_failed_run_triggers_a_skill_listening_for_failures(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, LIVE, "[failed]", bad_rows=0, good_rows=30)
    with served(tmp_path / "s.db", ["status:503:path=/batch"]) as url:  # the breaker stops it
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        (run,) = skill_runs(url)
    assert result.exit_code == 3
    assert run["payload"]["outcome"] == "failed" and run["payload"]["aborted"]


@pytest.mark.parametrize("skill", [UNKNOWN, PAUSED])
def test_a_refused_trigger_is_a_warning_and_the_exit_code_stays(
    tmp_path: Path, skill: str, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = write_pipeline(tmp_path, skill, "[always]", bad_rows=0)
    with caplog.at_level(logging.DEBUG), served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert skill_runs(url) == []
    assert result.exit_code == 0  # a healthy run stays green
    done = result.summary["after_run"]["skill"]
    assert done["triggered"] is False and "HTTP 404: Skill not found" in done["error"]
    assert any("was not triggered" in w for w in result.summary["warnings"])
    assert any(
        r.levelno == logging.WARNING and "was not triggered" in r.getMessage()
        for r in caplog.records
    )
    report = (result.report_dir / "report.md").read_text(encoding="utf-8")
    assert "**warning**: the skill" in report and "**not triggered**" in report
    # the API key (which signs the payload) shows nowhere
    texts = [p.read_text(encoding="utf-8") for p in result.report_dir.iterdir() if p.is_file()]
    texts += [caplog.text, repr(result), repr(result.summary)]
    assert texts and not any(KEY in t for t in texts)


def _tally(step: str, reasons: dict[str, int]) -> StepTally:
    t = StepTally(step, f"{step}.yaml", "contacts")
    t.reasons.update(reasons)
    return t


def test_the_payload_is_capped() -> None:
    reasons = {f"reason {i} " + "x" * 1000: 100 - i for i in range(30)}
    tallies = [_tally("contacts", reasons)]
    changed = {"contacts": {"created": list(range(MAX_CHANGED_IDS)), "updated": []}}
    steps = [{"step": f"s{i}", "object_type": "contacts", "aborted": "y" * 2000} for i in range(40)]
    summary = {"run_id": "r", "totals": {"created": 5000, "updated": 0}, "steps": steps}
    payload = skill_payload(summary, 1, tallies, changed)
    assert len(encode(payload)) <= MAX_BODY
    assert len(payload["top_failures"]) == TOP_FAILURES
    assert all(len(f["reason"]) <= MAX_REASON for f in payload["top_failures"])
    assert payload["top_failures"][0]["rows"] == 100
    assert payload["changed_records_truncated"] is True
    listed = sum(len(x["created"]) for x in payload["changed_records"])
    assert listed == payload["changed_records_listed"] <= MAX_CHANGED_IDS


def test_a_run_that_cannot_read_the_schema_still_triggers_the_skill(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, LIVE, "[failed]", bad_rows=0)
    with served(tmp_path / "s.db", ["status:503:path=/meta/schema"]) as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        (run,) = skill_runs(url)
    assert result.exit_code == 3 and result.summary["totals"]["not_sent"] == 4
    assert run["payload"]["outcome"] == "failed" and "503" in run["payload"]["aborted"]
    assert "verify" not in result.summary  # nothing was sent, nothing read back

"""Every kind of stop against the sandbox over loopback: the report's totals are the sums of
its steps (summary.json, report.md, report.html), ``sent`` counts only the rows that went out,
and the next steps fit the cause (``recordsync retry`` only for rows a resend can fix)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from tests.report.support import assert_totals_are_step_sums

from recordsync.core.errors import RunAborted
from recordsync.run.pipeline import run_pipeline
from recordsync.state import Journal

from .support import journal_full_at_the_third_chunk, served, target
from .test_early_stop_e2e import closed_port, two_steps
from .test_ledger_e2e import keep_rows, mirror_pipeline, request, write, write_csv


def went_out(report_dir: Path) -> int:
    """Rows of results.csv that were sent: every row with an outcome from the service."""
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return sum(
        r["status"] in ("created", "updated", "in_doubt", "merged")
        or (r["status"] == "failed" and not r["error"].startswith("not sent: "))
        for r in rows
    )


def checked(result: Any) -> tuple[dict[str, Any], str]:
    """The summary (its totals the steps' sums, ``rows_sent`` the rows that went out) and
    report.md + report.html."""
    summary = assert_totals_are_step_sums(result.report_dir)
    assert summary["accounting_ok"], summary["accounting_errors"]
    if not summary["dry_run"]:
        assert summary["totals"]["rows_sent"] == went_out(result.report_dir)
    text = "".join((result.report_dir / f).read_text("utf-8") for f in ("report.md", "report.html"))
    return summary, text


@pytest.mark.parametrize("dry_run", [False, True], ids=["real", "dry"])
def test_an_unreachable_service_says_check_the_base_url(tmp_path: Path, dry_run: bool) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    result = run_pipeline(
        request(tmp_path, two_steps(tmp_path), dry_run=dry_run), target=target(url)
    )
    summary, text = checked(result)
    assert summary["stop"]["kind"] == "unreachable" and summary["totals"]["rows_sent"] == 0
    assert f"the service could not be reached at {url} (target from test)" in text
    assert "recordsync retry" not in text


def test_a_service_down_at_the_start_says_run_again_once_it_answers(tmp_path: Path) -> None:
    with served(tmp_path / "s.db", faults=["status:503:path=/api/meta/users"]) as url:
        result = run_pipeline(request(tmp_path, two_steps(tmp_path)), target=target(url))
    summary, text = checked(result)
    assert summary["stop"]["kind"] == "unavailable" and summary["totals"]["rows_sent"] == 0
    assert "kept answering HTTP 503" in text and "recordsync retry" not in text


def breaker_pipeline(tmp: Path) -> Path:
    write_csv(
        tmp / "people.csv", ["Name", "Email"], [[f"P{i}", f"p{i}@x.example"] for i in range(40)]
    )
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
    )
    return write(
        tmp / "p.yaml",
        "steps: [people.yaml]\nsend: {chunk_size: 10, circuit_breaker: {max_failure_rate: 0.5}}\n",
    )


def test_a_run_stopped_mid_way_by_the_breaker_counts_only_the_rows_sent(tmp_path: Path) -> None:
    with served(tmp_path / "s.db", faults=["status:503:path=/batch"]) as url:
        result = run_pipeline(request(tmp_path, breaker_pipeline(tmp_path)), target=target(url))
    summary, text = checked(result)
    t = summary["totals"]
    assert summary["stop"]["kind"] == "breaker" and result.exit_code == 3
    assert 0 < t["rows_sent"] < t["rows_read"] == 40 and t["not_sent"] == 40 - t["rows_sent"]
    assert t["failed"] == 40  # the rows sent failed (HTTP 503), the others were not sent
    assert "the failure-rate circuit breaker stopped the run" in text
    # the rows sent failed for a transient reason: a retry may fix them; the rest: run again
    assert "resend the other failed and in-doubt rows" in text
    assert f"{t['not_sent']} row(s) were not sent because the run stopped first" in text


def test_a_run_aborted_by_a_guard_says_what_its_hint_says(tmp_path: Path) -> None:
    pipeline = mirror_pipeline(tmp_path, 10, max_count=2)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        keep_rows(tmp_path, [0, 1, 2, 3, 4, 5])
        refused = run_pipeline(request(tmp_path, pipeline), target=target(url))
    summary, text = checked(refused)
    assert summary["stop"]["kind"] == "aborted" and refused.exit_code == 3
    assert (
        "if these deletes are intended, run once with `recordsync run --allow-mass-deletes`" in text
    )
    assert "recordsync retry" not in text


def test_a_run_killed_mid_way_then_resumed_adds_up(tmp_path: Path) -> None:
    """A state write that fails part-way stops the run as Ctrl-C does: no summary (the rows
    so far stay in results.csv); the run that resumes it reports every row, adding up."""
    pipeline = breaker_pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(Journal, "begin_chunk", journal_full_at_the_third_chunk())
            with pytest.raises(RunAborted, match="cannot write the state store"):
                run_pipeline(request(tmp_path, pipeline), target=target(url))
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
    resumed, text = checked(again)
    t = resumed["totals"]
    assert resumed["stop"] is None and again.exit_code == 0 and resumed["attempts"] == 2
    assert (t["rows_read"], t["created"], t["not_sent"]) == (40, 40, 0)
    assert "Next steps" not in text

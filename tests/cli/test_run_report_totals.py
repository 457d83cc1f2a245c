"""``recordsync run`` of the sample pipeline, stopped in several ways: the report's totals row
is the sum of its steps (report.md, report.html, summary.json) and its next steps fit the
cause (a wrong key: fix the key, never ``recordsync retry``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.cli.test_run_exit_codes import write_project
from tests.e2e.support import served
from tests.report.support import assert_totals_are_step_sums, md_steps_table

WRONG = "sk_live_wrong_key_abc"


def only_report(root: Path) -> Path:
    (found,) = [p for p in (root / "reports").iterdir() if p.is_dir()]
    return found


def next_steps_of(md: str) -> list[str]:
    return md.split("## Next steps\n\n", 1)[1].strip().splitlines()


def test_a_wrong_key_reports_sent_0_and_says_fix_the_key_not_retry(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    monkeypatch.setenv("RECORDSYNC_API_KEY", WRONG)
    with served(project / "real.db") as url:
        code = cli("run", "pipelines/nightly.yaml", "--base-url", url)
    out, err = capsys.readouterr()
    assert code == 3
    report = only_report(project)
    summary = assert_totals_are_step_sums(report)
    md = (report / "report.md").read_text("utf-8")
    assert "  - fix the API key: it comes from env RECORDSYNC_API_KEY" in out  # its next step
    rows, total = md_steps_table(md)
    assert len(rows) == 3 and all(r["sent"] == "0" for r in rows)
    assert total["sent"] == "0" and total["not sent"] == total["read"] == total["failed"]
    assert int(total["read"]) == summary["totals"]["rows_read"] > 0
    assert summary["stop"]["kind"] == "auth"
    steps = next_steps_of(md)
    assert steps[0] == (
        "- fix the API key: it comes from env RECORDSYNC_API_KEY (target from --base-url): "
        f"set it to a valid key for {url}; then run again"
    )
    page = (report / "report.html").read_text("utf-8")
    assert "recordsync retry" not in md + page
    assert "fix the API key: it comes from env RECORDSYNC_API_KEY" in page
    assert WRONG not in out + err + "".join(p.read_text("utf-8") for p in report.iterdir())


def test_a_wrong_key_from_a_profile_names_the_profile_and_its_variable(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    monkeypatch.setenv("STAGING_KEY", WRONG)
    with served(project / "real.db") as url:
        (project / "configs" / "profiles.yaml").write_text(
            f"staging:\n  base_url: {url}\n  api_key_env: STAGING_KEY\n"
        )
        code = cli("run", "pipelines/nightly.yaml", "--profile", "staging", "-q")
    capsys.readouterr()
    assert code == 3
    md = (only_report(project) / "report.md").read_text("utf-8")
    assert next_steps_of(md)[0].startswith(
        "- fix the API key: it comes from env STAGING_KEY (target from --profile staging)"
    )
    assert "recordsync retry" not in md and WRONG not in md


def test_a_dry_run_of_the_sample_adds_up_and_suggests_no_retry(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--dry-run", "-q") == 1
    capsys.readouterr()
    report = only_report(project)
    summary = assert_totals_are_step_sums(report)
    assert summary["stop"] is None and summary["totals"]["rows_sent"] > 0
    md = (report / "report.md").read_text("utf-8")
    assert "recordsync retry" not in md and "invalid rows: fix the source" in md


def test_a_config_error_at_a_later_step_says_which_file_to_fix(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    pipeline = write_project(project, bad_byte=True)
    assert cli("run", str(pipeline), "--quiet") == 3
    capsys.readouterr()
    report = only_report(project)
    summary = assert_totals_are_step_sums(report)
    people, more = summary["steps"]
    assert (people["rows_sent"], people["created"], more["rows_sent"]) == (12, 12, 0)
    assert summary["stop"]["kind"] == "config"
    md = (report / "report.md").read_text("utf-8")
    first = next_steps_of(md)[0]
    assert first.startswith("- fix ") and "more.csv" in first and first.endswith("run again")
    assert "recordsync retry" not in md
    assert json.loads((report / "summary.json").read_text("utf-8")) == summary

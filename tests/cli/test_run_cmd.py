"""``recordsync run`` / ``retry`` / ``report``: the real commands, their output and exit codes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.e2e.support import KEY, served


def only_report(root: Path) -> Path:
    (found,) = [p for p in (root / "reports").iterdir() if p.is_dir()]
    return found


def test_run_into_the_embedded_sandbox(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    code = cli("run", "pipelines/nightly.yaml")
    out, err = capsys.readouterr()
    assert code == 1  # the sample data has invalid rows on purpose
    assert "using the embedded sandbox" in err
    assert out.startswith("recordsync run ") and "  contacts: read 501 (" in out
    md = (only_report(project) / "report.md").read_text("utf-8")
    assert (  # the deals whose company was invalid point to that company's row
        "- **next step**: fix the parent row first: companies.csv row 56 of step 'companies'"
        " (probably the row with key 'auroralogistics.com') was not sent: column 'Industry'"
    ) in md
    assert err.splitlines()[-1].startswith("17 of 1,001 rows not ok (16 invalid, 1 duplicate)")
    report = only_report(project)
    summary = json.loads((report / "summary.json").read_text())
    assert summary["totals"]["created"] > 0 and summary["accounting_ok"]
    assert (project / ".recordsync" / "sandbox.db").is_file()
    assert cli("report", str(report)) == 0
    assert "## Top failure reasons" in capsys.readouterr().out


def test_dry_run_quiet(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet") == 1
    out, _ = capsys.readouterr()
    assert out == ""
    summary = json.loads((only_report(project) / "summary.json").read_text())
    assert summary["dry_run"] is True and summary["totals"]["created"] == 0


def test_retry_with_nothing_to_retry_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    cli("run", "pipelines/nightly.yaml", "-q")
    capsys.readouterr()
    assert cli("retry", str(only_report(project)), "-q") == 0
    assert "nothing to retry" in capsys.readouterr().err


def test_missing_key_for_a_real_target(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--base-url", "http://127.0.0.1:9") == 3
    err = capsys.readouterr().err
    assert "no API key" in err and "RECORDSYNC_API_KEY" in err


def _run_with_a_wrong_key(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
    capsys: pytest.CaptureFixture[str],
) -> tuple[str, str]:
    """``recordsync run`` into a served sandbox with a wrong key: exit 3; its stdout, stderr."""
    monkeypatch.setenv("RECORDSYNC_API_KEY", "sk_live_wrong_key_abc")
    with served(project / "real.db") as url:
        code = cli("run", "pipelines/nightly.yaml", "--base-url", url)
    assert code == 3
    return capsys.readouterr()


def test_wrong_key_names_the_variable_and_never_prints_it(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    out, err = _run_with_a_wrong_key(project, monkeypatch, cli, capsys)
    assert "HTTP 401" in err and "RECORDSYNC_API_KEY" in err
    assert "sk_live_wrong_key_abc" not in out + err


def test_a_run_stopped_at_the_schema_fetch_still_writes_its_report(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    out, err = _run_with_a_wrong_key(project, monkeypatch, cli, capsys)
    summary = json.loads((only_report(project) / "summary.json").read_text())
    assert "HTTP 401" in summary["aborted"] and summary["accounting_ok"]
    t = summary["totals"]
    assert t["rows_read"] == t["failed"] == t["not_sent"] > 0 and t["created"] == 0
    assert "  aborted: GET /api/meta/schema: HTTP 401" in out
    assert err.splitlines()[-1].startswith("run stopped: 1,001 of 1,001 rows not ok (")
    done = [line for line in err.splitlines() if " done: read " in line]
    assert len(done) == 3 and all(", sent 0, " in line and " not sent)" in line for line in done)
    assert sum(" -> " in line for line in err.splitlines()) == 3  # each drained step starts


def test_profile_key_comes_from_its_env_var(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    monkeypatch.setenv("STAGING_KEY", KEY)
    with served(project / "real.db") as url:
        (project / "configs" / "profiles.yaml").write_text(
            f"staging:\n  base_url: {url}\n  api_key_env: STAGING_KEY\n"
        )
        code = cli("run", "pipelines/nightly.yaml", "--profile", "staging", "-q")
    assert code == 1  # connected with STAGING_KEY (a wrong key would be 3)
    summary = json.loads((only_report(project) / "summary.json").read_text())
    assert summary["target"] == url and summary["target_origin"] == "--profile staging"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "pipelines/missing.yaml"], "does not exist"),
        (["run", "pipelines/nightly.yaml", "--chunk-size", "101"], "101"),
        (["run", "pipelines/nightly.yaml", "--profile", "nope"], "no profile 'nope'"),
    ],
)
def test_usage_and_config_errors_exit_2(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
    cli: Callable[..., int],
) -> None:
    (project / "configs" / "profiles.yaml").write_text("prod:\n  base_url: https://x\n")
    assert cli(*args) == 2
    assert message in capsys.readouterr().err


def test_plain_progress_lines_when_not_a_terminal(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    cli("run", "pipelines/nightly.yaml")
    err = capsys.readouterr().err
    assert "step contacts done: read 501" in err


def test_a_mapping_that_does_not_fit_the_schema_stops_before_anything_is_sent(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    deals = project / "configs" / "deals.yaml"
    deals.write_text(deals.read_text() + "  colour: Notes\n")
    assert cli("run", "pipelines/nightly.yaml") == 2
    err = capsys.readouterr().err
    assert "colour" in err
    assert not (project / "reports").exists()  # no step ran, companies were not sent


def test_run_stopped_by_the_breaker_then_retry(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
) -> None:
    monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
    with served(project / "real.db", ["status:400:path=/batch:after=2"]) as url:
        code = cli("run", "pipelines/nightly.yaml", "--base-url", url, "-q")
    err = capsys.readouterr().err
    assert code == 3 and "circuit breaker" in err
    first = only_report(project)
    with served(project / "real.db") as url:
        code = cli("retry", str(first), "--base-url", url, "-q")
    # exit 1: two retried deals refer to a company that is invalid in the sample (its
    # industry), so their company_id reference cannot be resolved
    assert code == 1
    (second,) = [p for p in (project / "reports").iterdir() if p != first]
    summary = json.loads((second / "summary.json").read_text())
    assert summary["retry_of"] == first.name and summary["totals"]["failed"] == 0
    assert summary["totals"]["created"] > 0 and summary["totals"]["rows_invalid"] == 2
    failures = (second / "failures.csv").read_text(encoding="utf-8")
    assert failures.count("no 'companies' record with key 'auroralogistics.com'") == 2


def test_a_second_run_of_a_running_pipeline_is_refused_with_exit_3(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    import os

    from recordsync.state import PipelineLock

    with PipelineLock(project / ".recordsync", "nightly"):  # "a run in progress"
        code = cli("run", "pipelines/nightly.yaml", "--quiet")
    err = capsys.readouterr().err
    assert code == 3
    assert "pipeline 'nightly' is already running" in err and f"pid {os.getpid()}" in err
    assert not (project / "reports").exists()  # refused before anything was sent or written
    assert cli("run", "pipelines/nightly.yaml", "--quiet") == 1  # sample data: invalid rows
    assert cli("run", "pipelines/nightly.yaml", "--quiet") == 1
    second = json.loads(
        max((project / "reports").iterdir(), key=lambda p: p.stat().st_mtime)
        .joinpath("summary.json")
        .read_text()
    )
    assert second["totals"]["rows_sent"] == 0  # the second run sends nothing
    assert cli("run", "pipelines/nightly.yaml", "--quiet", "--full-refresh") == 1


def test_verify_flags(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    """The read-back is on by default (``## Read-back`` in report.md), off with
    --no-verify."""
    assert cli("run", "pipelines/nightly.yaml") == 1
    text = (only_report(project) / "report.md").read_text(encoding="utf-8")
    assert "## Read-back" in text and " differ from what was sent (0 field(s))" in text
    for report in (project / "reports").iterdir():
        shutil.rmtree(report)
    assert cli("run", "--no-verify", "pipelines/nightly.yaml") == 1
    summary = json.loads((only_report(project) / "summary.json").read_text())
    assert summary["verify"] == {"enabled": False, "why": "--no-verify"}

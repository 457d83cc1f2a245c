"""``recordsync report REPORT_DIR --open``: report.html in the web browser (a fake opener)."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from pathlib import Path

import pytest


def only_report(root: Path) -> Path:
    (found,) = [p for p in (root / "reports").iterdir() if p.is_dir()]
    return found


def test_open_hands_the_report_html_to_the_browser(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--quiet") == 1
    report = only_report(project)
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda uri: opened.append(uri) or True)
    capsys.readouterr()
    assert cli("report", str(report), "--open") == 0
    assert opened == [(report / "report.html").resolve().as_uri()]
    out, err = capsys.readouterr()
    assert out == "" and f"opened {report / 'report.html'}" in err


def test_open_without_a_browser_says_where_the_page_is(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet") == 1
    report = only_report(project)
    monkeypatch.setattr(webbrowser, "open", lambda uri: False)
    capsys.readouterr()
    assert cli("report", str(report), "--open") == 2
    err = capsys.readouterr().err
    assert "no web browser could be started" in err
    assert (report / "report.html").resolve().as_uri() in err
    (report / "report.html").unlink()  # a report from before report.html existed
    assert cli("report", str(report), "--open") == 3
    assert "report.html is missing" in capsys.readouterr().err


def test_report_with_no_argument_prints_the_latest_run(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[..., int],
) -> None:
    monkeypatch.chdir(project)
    assert cli("report") == 2  # no run yet: says so, names the folder
    assert f"no reports directory in {project / 'reports'}" in capsys.readouterr().err
    assert cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet") == 1
    assert cli("run", "pipelines/nightly.yaml", "--quiet") == 1
    capsys.readouterr()
    dry, real = sorted(
        (p for p in (project / "reports").iterdir()),
        key=lambda p: (p / "summary.json").stat().st_mtime_ns,
    )
    for args in ((), ("reports",)):
        assert cli("report", *args) == 0
        out, err = capsys.readouterr()
        assert out.strip() == (real / "report.md").read_text("utf-8").strip()
        assert err.strip() == f"latest run: {real.relative_to(project)}"
    assert cli("report", str(dry)) == 0
    out, err = capsys.readouterr()
    assert "(dry run)" in out.splitlines()[0] and err == ""

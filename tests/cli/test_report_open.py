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

"""report.html of a real run (against the sandbox over HTTP) in headless Chromium, driven by
Playwright: no console message, no request but the page itself, the numbers of summary.json,
hostile cells shown as text. The screenshot is kept in the test's tmp dir (its path printed).

Needs Debian's ``chromium`` (``.ci/run`` installs it) and Playwright's Python package (dev
extras; it never downloads a browser here). Skipped where no browser is installed, except in CI
(``CI=true``), where a missing browser fails the test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from .test_report_html_e2e import FORMULA, SCRIPT, hostile_run, summary_of

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(why: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (CI must test report.html in a real browser)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).is_file():
        _unavailable("no Chromium: `apt-get install -y chromium` (as .ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed: pip install -e '.[dev]'")
    with sync_playwright() as pw:
        # Playwright starts it headless with a fresh, temporary user data dir
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def test_the_report_of_a_real_run_in_chromium(tmp_path: Path, browser: Any) -> None:
    result = hostile_run(tmp_path)
    summary = summary_of(result)
    uri = (result.report_dir / "report.html").resolve().as_uri()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console: list[str] = []
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url == uri else route.abort(),
    )
    page.goto(uri, wait_until="load")
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot of report.html: {shot}")

    assert console == []
    assert requests == [uri]  # nothing else was asked for, let alone sent out
    assert dialogs == [] and page.locator("script").count() == 0

    text = page.locator("body").inner_text()
    assert SCRIPT in text  # the hostile cells, shown as text
    assert "'" + FORMULA in text  # formula-safe, as in failures.csv
    assert page.locator("a[href^='http']").count() == 0
    t = summary["totals"]
    assert f"{t['rows_not_ok']:,} of {t['rows_read']:,} rows not ok" in text

    steps = {s["step"]: s for s in summary["steps"]}
    cells = page.locator("[data-key]").evaluate_all(
        "els => els.map(e => [e.dataset.step ?? null, e.dataset.key, e.textContent])"
    )
    cells += page.locator("[data-total]").evaluate_all(
        "els => els.map(e => [null, e.dataset.total, e.textContent])"
    )
    assert len(cells) >= 3 * 12 + 4  # two steps and the totals, owners, references
    for step, key, shown in cells:
        value: Any = steps[step] if step is not None else summary["totals"]
        for part in key.split("."):
            value = value[part]
        assert int(shown) == value, (step, key, shown)

    groups = page.locator(".reason")  # each failure group: its rows, then its next step
    assert groups.count() > 2
    for i in range(groups.count()):
        nxt = groups.nth(i).locator("p.next")
        assert nxt.is_visible() and nxt.inner_text().startswith("Next step: ")
        box, rows = nxt.bounding_box(), groups.nth(i).locator("table.ex").bounding_box()
        assert box is not None and (rows is None or box["y"] >= rows["y"] + rows["height"])

    bars = page.locator("svg.bar")
    assert bars.count() == len(summary["steps"])
    for i, step in enumerate(summary["steps"]):
        titles = bars.nth(i).locator("title").all_text_contents()
        assert sum(int(t.rsplit(": ", 1)[1]) for t in titles) == step["rows_read"]
    page.close()

"""report.html (and the example rows of report.md) after real runs against the sandbox over
HTTP: written for every run and dry run, self-contained, every number from summary.json, every
cell escaped and formula-safe, value maps that paste as YAML (tests/report/test_html.py has the
renderer's own tests; test_report_html_browser.py loads the page in Chromium)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import yaml

from recordsync.run.pipeline import run_pipeline
from recordsync.run.retry import retry_report
from recordsync.run.runner import RunResult

from .support import served, target
from .test_ledger_e2e import request, write, write_csv

SCRIPT = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://x")'
COMPANIES = [["Acme Ltd", "acme.com"], ["Globex", "globex.io"], ["GLOBEX", "globex.net"]]
CONTACTS = [
    ["Ann", "ann@x.example", "Acme Ltd", "customer", "ada@acme.example"],
    ["Ben", SCRIPT, "Globex", "lead", "ben@acme.example"],  # invalid e-mail
    ["Cy", "cy@x.example", "Umbrella", "lead", "chloe@acme.example"],  # no such company
    ["Di", "di@x.example", "", FORMULA, "diego@acme.example"],  # not an option
    ["Ed", "ed@x.example", "", "Custmer", "nobody@acme.example"],  # a typo; unknown owner
    ["Fay", "ann@x.example", "", "lead", "ada@acme.example"],  # a duplicate of Ann
    ["Gus", "gus@x.example", "Globex", "Qualifed", "Ben Carter"],  # a typo; owner by name
]


def hostile_pipeline(tmp: Path) -> Path:
    """Two steps: companies (one folded into another: merged) and contacts referring to them,
    with owners, hostile cells, typos of options and a duplicate."""
    write_csv(tmp / "companies.csv", ["Company Name", "Website"], COMPANIES)
    write_csv(tmp / "contacts.csv", ["Name", "Email", "Company", "Stage", "Owner"], CONTACTS)
    write(
        tmp / "companies.yaml",
        "object_type: companies\nsource: {path: companies.csv}\nname: Company Name\n"
        "fields: {domain: Website}\nledger_key: {column: Website, normalize: domain}\n",
    )
    write(
        tmp / "contacts.yaml",
        "object_type: contacts\nsource: {path: contacts.csv}\nname: Name\nmatch_by: [email]\n"
        "owner: {column: Owner, on_unknown: fail}\n"
        "fields:\n  email: Email\n  lifecycle_stage: Stage\n  company_id:\n    column: Company\n"
        "    ref: {step: companies, by: name}\n",
    )
    return write(tmp / "hostile.yaml", "name: hostile\nsteps: [companies.yaml, contacts.yaml]\n")


def hostile_run(tmp: Path, *, dry_run: bool = False) -> RunResult:
    tmp.mkdir(parents=True, exist_ok=True)
    path = hostile_pipeline(tmp)
    with served(tmp / "s.db") as url:
        return run_pipeline(request(tmp, path, dry_run=dry_run), target=target(url))


def summary_of(result: RunResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((result.report_dir / "summary.json").read_text("utf-8"))
    return data


def test_every_run_and_dry_run_writes_a_self_contained_report_html(tmp_path: Path) -> None:
    for dry_run in (True, False):
        result = hostile_run(tmp_path / str(dry_run), dry_run=dry_run)
        page = (result.report_dir / "report.html").read_text("utf-8")
        assert page.startswith("<!DOCTYPE html>")
        assert "default-src 'none'" in page  # nothing may be fetched, even by mistake
        assert not re.search(r"<script|\bsrc=|url\(|@import|<link", page, re.I)
        hrefs = re.findall(r'href="([^"]*)"', page)
        assert hrefs and set(hrefs) <= {"failures.csv", "results.csv", "report.md", "summary.json"}
        assert ("dry run</span>" in page) is dry_run
        assert ("a real run would leave them without a record" in page) is dry_run
        bars = re.findall(r'<svg class="bar".*?</svg>', page)
        for bar, step in zip(bars, summary_of(result)["steps"], strict=True):
            segments = dict(re.findall(r"<title>([^<]*): (\d+)</title>", bar))
            assert sum(map(int, segments.values())) == step["rows_read"]
            assert ("valid (dry run)" in segments) is (dry_run and step["rows_sent"] > 0)


def test_hostile_cells_are_escaped_and_formula_safe(tmp_path: Path) -> None:
    page = (hostile_run(tmp_path).report_dir / "report.html").read_text("utf-8")
    assert SCRIPT not in page and "alert(1)" in page
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in page
    assert "<code>&#x27;=HYPERLINK(&quot;http://x&quot;)</code>" in page  # the leading '


def test_every_number_on_the_page_is_the_one_in_summary_json(tmp_path: Path) -> None:
    result = hostile_run(tmp_path)
    summary = summary_of(result)
    page = (result.report_dir / "report.html").read_text("utf-8")
    steps = {s["step"]: s for s in summary["steps"]}
    cells = re.findall(r'data-(?:step="([^"]*)" data-key|total)="([^"]+)">(\d+)<', page)
    assert len(cells) > 2 * 12 + 12  # the steps' table, its totals, owners and references
    for step, key, shown in cells:
        value: Any = steps[html.unescape(step)] if step else summary["totals"]
        for part in key.split("."):
            value = value[part]
        assert int(shown) == value, (step, key)
    assert summary["totals"]["rows_not_ok"] > 0
    t = summary["totals"]
    assert f"{t['rows_not_ok']:,} of {t['rows_read']:,} rows not ok" in page


def test_report_md_and_html_show_example_rows_with_their_values(tmp_path: Path) -> None:
    result = hostile_run(tmp_path)
    md = (result.report_dir / "report.md").read_text("utf-8")
    lines = md.splitlines()

    def examples_of(header: str) -> list[str]:
        (at,) = [i for i, x in enumerate(lines) if x.startswith("**") and header in x]
        return lines[at + 2 : lines.index("", at + 2)]

    (line, step) = examples_of("is not a valid email address")
    assert line.startswith("- contacts.csv row 3")  # Ben is line 3 of contacts.csv
    assert line.endswith(f": {SCRIPT!r}") and step.startswith("- **next step**: fix the e-mail")
    line, *_ = examples_of("fits no row of step 'companies'")
    assert line.startswith("- contacts.csv row 4")
    assert line.endswith(": 'Umbrella'")  # no column: the value the message quotes
    line, *_ = examples_of("duplicate key")
    assert "'email:ann@x.example'" in line
    assert line.startswith(("- contacts.csv row 2 (email ", "- contacts.csv row 7 (email "))
    page = (result.report_dir / "report.html").read_text("utf-8")
    contacts = tmp_path / "contacts.csv"
    assert re.search(  # row, file, its key, no column, the value quoted, then the message
        f'<td class="n">4</td><td title="{re.escape(str(contacts))}">contacts.csv</td>'
        '<td>[^<]+</td><td><span class="muted">—</span></td>'
        '<td><code>Umbrella</code><div class="msg">company_id: field &#x27;name&#x27;',
        page,
    )
    assert re.search(
        f'<td title="{re.escape(str(contacts))}">contacts.csv</td><td>(<span class="muted">—'
        "</span>|[^<]+)</td><td>Email</td><td><code>&lt;script",
        page,
    )
    assert page.count('<p class="next"><b>Next step:</b> ') == len(summary_groups(md))


def summary_groups(md: str) -> list[str]:
    """The failure reason groups of report.md (their bold headers)."""
    return [x for x in md.splitlines() if x.startswith("**") and " row" in x.split("**")[1]]


def test_suggested_value_maps_paste_as_yaml(tmp_path: Path) -> None:
    page = (hostile_run(tmp_path).report_dir / "report.html").read_text("utf-8")
    (snippet,) = re.findall(r"<pre>(.*?)</pre>", page, re.S)
    assert yaml.safe_load(html.unescape(snippet)) == {
        "fields": {
            "lifecycle_stage": {
                "column": "Stage",
                "value_map": {"Custmer": "customer", "Qualifed": "qualified"},
            }
        }
    }


def test_a_retry_writes_report_html_too(tmp_path: Path) -> None:
    write_csv(tmp_path / "deals.csv", ["Name", "Stage"], [["Deal 1", "won"], ["Deal 2", "lost"]])
    write(
        tmp_path / "deals.yaml",
        "object_type: deals\nsource: {path: deals.csv}\nname: Name\nmatch_by: [name]\n"
        "fields: {stage: Stage}\n",
    )
    path = write(tmp_path / "p.yaml", "steps: [deals.yaml]\n")
    with served(tmp_path / "s.db", ["status:503:path=/batch"]) as url:
        first = run_pipeline(request(tmp_path, path), target=target(url))
    page = (first.report_dir / "report.html").read_text("utf-8")
    assert "<title>failed: 2</title>" in page and ">2 of 2 rows not ok:" in page
    assert f"<code>recordsync retry {first.report_dir}</code>" in page  # next steps
    with served(tmp_path / "s.db") as url:
        again = retry_report(first.report_dir, request(tmp_path, path), target=target(url))
    page = (again.report_dir / "report.html").read_text("utf-8")
    assert f"retry of {first.summary['run_id']}" in page
    assert "<title>created: 2</title>" in page and "Every row read has a record" in page

"""Helpers of the report tests."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from recordsync.report.tally import COUNT_KEYS, StepTally, totals


def summary_of(tallies: list[StepTally]) -> dict[str, object]:
    """summary.json of a finished (not dry) run r1 made of ``tallies``, as the renderers read it."""
    return {
        "run_id": "r1",
        "steps": [t.as_json(False) for t in tallies],
        "totals": totals(tallies),
        "accounting_ok": True,
        "report_dir": "reports/r1",
    }


def md_steps_table(md: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """report.md's steps table: its step rows and its totals row, each as column → cell."""
    lines = md.split("## Steps\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")), strict=True))
            for ln in lines[2:]]  # fmt: skip
    (total,) = [r for r in rows if r["step"] == "**total**"]
    return [r for r in rows if r is not total], total


def html_counts(page: str) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """report.html's step counts {(step, key): n} and its totals row {key: n}."""
    steps = {
        (html.unescape(s), k): int(n)
        for s, k, n in re.findall(r'data-step="([^"]*)" data-key="([^"]*)">(\d+)<', page)
    }
    total = {k: int(n) for k, n in re.findall(r'data-total="([^"]*)">(\d+)<', page)}
    return steps, total


def assert_totals_are_step_sums(report_dir: Path) -> dict[str, Any]:
    """summary.json, report.md and report.html of ``report_dir``: every count of the totals is
    the sum of the steps' (the totals row of each table, column by column); the summary."""
    summary: dict[str, Any] = json.loads((report_dir / "summary.json").read_text("utf-8"))
    steps = summary["steps"]
    for key in COUNT_KEYS:
        assert summary["totals"][key] == sum(s[key] for s in steps), key
    rows, total = md_steps_table((report_dir / "report.md").read_text("utf-8"))
    assert len(rows) == len(steps) and "not sent" in total
    for column in total:
        if column not in ("step", "object type"):
            assert int(total[column]) == sum(int(r[column]) for r in rows), column
    counts, totals_row = html_counts((report_dir / "report.html").read_text("utf-8"))
    assert "not_sent" in totals_row and "rows_sent" in totals_row
    for key, n in totals_row.items():
        assert n == sum(counts[(s["step"], key)] for s in steps), key
        assert n == summary["totals"][key], key
    return summary

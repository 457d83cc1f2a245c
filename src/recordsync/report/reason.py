"""The one line that says why a run's rows are not all ok (exit 1), from its summary.json:
what ``recordsync run -q`` prints and what an orchestrator shows as the task's failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def why_rows_not_ok(summary: dict[str, Any], report_dir: Path) -> str | None:
    """``16 invalid, 2 failed rows: see <dir>/failures.csv`` (the reason for exit 1)."""
    t = summary["totals"]
    names = (
        ("rows_invalid", "invalid"),
        ("failed", "failed"),
        ("in_doubt", "in doubt"),
        ("rows_merged", "merge held"),
        ("merged", "merged"),
    )
    rows = [f"{t[key]} {name}" for key, name in names if t.get(key)]
    dups = sum(
        s.get("rows_duplicate", 0) for s in summary["steps"] if not s.get("duplicates_expected")
    )
    if dups:
        rows.append(f"{dups} duplicate")
    failures = report_dir / summary.get("files", {}).get("failures", "failures.csv")
    parts = [f"{', '.join(rows)} rows: see {failures}"] if rows else []
    if t.get("delete_failed"):
        parts.append(f"{t['delete_failed']} mirror deletes failed: see {report_dir / 'report.md'}")
    guarded = {g["step"] for g in summary.get("guards") or []}
    skipped = [
        s["step"]
        for s in summary["steps"]
        if s.get("mirror_deletes_skipped") and s["step"] not in guarded
    ]
    if skipped:
        parts.append(
            f"mirror deletes of {', '.join(skipped)} skipped (a line may hide rows): see"
            f" {report_dir / 'report.md'}"
        )
    for g in summary.get("guards") or []:  # a source far smaller than in the healthy runs
        parts.append(
            f"volume guard of {g['step']}: {g['current']} rows against {g['previous']}"
            f" ({g['action'].replace('_', ' ')}): see {report_dir / 'report.md'}"
        )
    verify = summary.get("verify") or {}
    if verify.get("failed"):
        where = report_dir / (verify.get("file") or "report.md")
        parts.append(
            f"{verify['mismatched_records']} record(s) read back differ from what was sent: "
            f"see {where}"
        )
    return "; ".join(parts) or None

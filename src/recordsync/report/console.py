"""What a run prints at its end: a short summary of its report, then one line, the verdict.

report.md keeps everything (every reason group, owners, references, value maps); the console
gets what a reader acts on: the target, a line per step, the largest failure groups each
with its next step, the run's own next steps, and, last, the verdict with the report's path
(:func:`verdict`), so that the last line of a run's output always says how it went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recordsync.report.examples import shown
from recordsync.report.group_steps import group_step, groups
from recordsync.report.next_steps import next_steps
from recordsync.report.reason import why_rows_not_ok
from recordsync.report.tally import StepTally

CONSOLE_GROUPS = 5
"""Failure groups printed (the largest first); report.md has every one."""
_STEP_COUNTS = (
    ("rows_unchanged", "unchanged"),
    ("created", "created"),
    ("updated", "updated"),
    ("merged", "merged"),
    ("rows_invalid", "invalid"),
    ("rows_duplicate", "duplicate"),
    ("rows_merged", "merge held"),
    ("failed", "failed"),
    ("in_doubt", "in doubt"),
    ("not_sent", "not sent"),
)


def _n(value: int) -> str:
    return f"{value:,}"


def _step_line(step: dict[str, Any], dry: bool) -> str:
    counts = [(k, w) for k, w in _STEP_COUNTS if not (dry and k in ("created", "updated"))]
    parts = [f"{_n(int(step.get(k) or 0))} {w}" for k, w in counts if step.get(k)]
    if dry and step.get("rows_sent"):
        parts.insert(0, f"{_n(int(step['rows_sent']))} valid")
    return f"  {step['step']}: read {_n(int(step.get('rows_read') or 0))}" + (
        f" ({', '.join(parts)})" if parts else ""
    )


def render_console(summary: dict[str, Any], tallies: list[StepTally], report_dir: Path) -> str:
    """The short summary printed at the end of a run (the verdict not included)."""
    dry = bool(summary.get("dry_run"))
    head = f"recordsync run {summary.get('run_id', '')}" + (" (dry run)" if dry else "")
    lines = [f"{head}: {summary.get('pipeline')} → {summary.get('target')}"]
    if summary.get("aborted"):
        lines.append(f"  aborted: {summary['aborted']}")
    lines += [_step_line(s, dry) for s in summary.get("steps") or []]
    for warning in summary.get("accounting_errors") or []:
        lines.append(f"  accounting: {warning}")
    found = groups(tallies, str(report_dir))
    if found:
        more = len(found) - CONSOLE_GROUPS
        lines += [
            "",
            f"rows not ok, by reason ({len(found)} reason(s)"
            + (f"; the {CONSOLE_GROUPS} largest here, every one in report.md" if more > 0 else "")
            + "):",
        ]
        for g in found[:CONSOLE_GROUPS]:
            lines.append(f"  {_n(g.rows)} × {g.tally.step}: {shown(g.reason, 160)}")
            lines.append(f"    → {group_step(g)}")
    steps = [s for s in next_steps(summary) if not s.startswith("failed, invalid, in-doubt")]
    if steps:
        lines += ["", "next steps:", *(f"  - {s}" for s in steps)]
    return "\n".join(lines)


def verdict(summary: dict[str, Any], report_dir: Path, *, stopped: bool = False) -> str:
    """The last line of a run's output: ``17 of 1,001 rows not ok (16 invalid, 1 duplicate):
    see <dir>/report.md`` or ``all 1,001 rows ok: <dir>/report.md``."""
    t = summary.get("totals") or {}
    read = int(t.get("rows_read") or 0)
    bad = int(t.get("rows_not_ok") or 0)
    page = report_dir / "report.md"
    dry = bool(summary.get("dry_run"))
    if stopped or summary.get("aborted"):
        lead = "dry run stopped: " if dry else "run stopped: "
    else:
        lead = "dry run: " if dry else ""
    if not summary.get("accounting_ok", True):
        return f"{lead}the report does not add up (accounting mismatch): see {page}"
    why = why_rows_not_ok(summary, report_dir)
    if bad:
        kinds = why.split(" rows: see ")[0] if why else ""
        return (
            f"{lead}{_n(bad)} of {_n(read)} rows not ok"
            + (f" ({kinds})" if kinds else "")
            + f": see {page}"
        )
    if why:  # rows ok, but mirror deletes failed or were skipped
        return f"{lead}all {_n(read)} rows ok, but {why}"
    if lead.endswith("stopped: "):
        what = "no row read" if not read else f"none of the {_n(read)} rows read is not ok"
        return f"{lead}{what}: see {page}"
    return f"{lead}all {_n(read)} rows ok: {page}"

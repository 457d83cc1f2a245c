"""``report.md``: the human summary printed at the end of a run and kept with the report."""

from __future__ import annotations

from typing import Any

from recordsync.report.examples import example_text
from recordsync.report.group_steps import group_step, groups
from recordsync.report.next_steps import next_steps
from recordsync.report.readback import readback_sections
from recordsync.report.tally import COUNT_COLUMNS, StepTally
from recordsync.report.wording import OWNER_WORDS, held_and_duplicate, service_merged

TOP_REASONS = 10
ALL_REASONS = 30
"""Up to this many reason groups, report.md lists them all; beyond, the top TOP_REASONS."""
MD_EXAMPLES = 3
"""Example rows per reason group in report.md (report.html shows all that were kept)."""
_COLUMNS = (("step", "step"), ("object type", "object_type"), *COUNT_COLUMNS, ("chunks", "chunks"))
_DELETE_COLUMNS = (("deleted", "deleted"), ("delete failed", "delete_failed"))
"""Mirror deletes (records, not source rows): shown only when a step deleted or tried to."""


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _mirror_deletes_ran(summary: dict[str, Any]) -> bool:
    return any(s.get("deleted") or s.get("delete_failed") for s in summary["steps"])


def _table(summary: dict[str, Any]) -> list[str]:
    columns = _COLUMNS + (_DELETE_COLUMNS if _mirror_deletes_ran(summary) else ())
    head = "| " + " | ".join(name for name, _ in columns) + " |"
    rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(columns))) + "|"
    lines = [head, rule]
    for step in summary["steps"]:
        lines.append("| " + " | ".join(_md(step.get(key, "")) for _, key in columns) + " |")
    t = summary["totals"]
    total = " | ".join(str(t.get(key, 0)) for _, key in columns[2:])
    lines.append(f"| **total** | | {total} |")
    return lines


def _owners(summary: dict[str, Any]) -> list[str]:
    """How the owners of each step's rows were found (steps with an owner column)."""
    lines: list[str] = []
    for step in summary["steps"]:
        counts = step.get("owners") or {}
        found = [f"{words} {counts[key]}" for key, words in OWNER_WORDS if counts.get(key)]
        if len(found) > 1 or (found and not counts.get("not_looked_up")):  # an owner column
            lines.append(f"- {_md(step['step'])}: " + ", ".join(found))
    return ["", "## Owners", "", "Rows by how their owner was found:", "", *lines] if lines else []


def _references(tallies: list[StepTally]) -> list[str]:
    """Per step and ``ref`` field: references set, blank, not found, ambiguous; a loud line
    for every field whose values found nothing."""
    refs = [(t, f, c) for t in tallies for f, c in t.refs.items()]
    if not refs:
        return []
    lines = ["", "## References", ""]
    lines.append("| step | field | refers to | by | set | no value | not found | ambiguous |")
    lines.append("|---|---|---|---|---:|---:|---:|---:|")
    for t, fname, c in refs:
        cells = [t.step, fname, c["step"], c["by"], c["set"], c["no_value"], c["not_found"]]
        lines.append("| " + " | ".join(_md(x) for x in [*cells, c["ambiguous"]]) + " |")
    lines.append("")
    for t, fname, c in refs:
        if c.get("from_service"):
            lines.append(
                f"- {t.step} / {_md(fname)}: {c['from_service']} of the references set were found"
                f" among the service's records, not in this run (lookup: service)"
            )
        missed, amb = c["not_found"], c["ambiguous"]
        if not missed and not amb:
            continue
        what = "left unset (on_missing: unset)" if c["on_missing"] == "unset" else "invalid"
        loud = "**NO reference matched**: " if not c["set"] else ""
        lines.append(
            f"- {loud}{t.step} / {_md(fname)}: {missed} value(s) found no record of step"
            f" '{_md(c['step'])}' by {_md(c['by'])} ({what}), {amb} fit several rows (invalid,"
            " never guessed)"
        )
    return lines


def _merges_and_duplicates(summary: dict[str, Any]) -> list[str]:
    """The rows without a record of their own, per step (recordsync.report.wording)."""
    lines = [f"- {_md(s.step)}: {s.text}" for s in held_and_duplicate(summary, brief=False)]
    return ["", "## Merges and duplicates", "", *lines] if lines else []


def _service_merged(tallies: list[StepTally]) -> list[str]:
    """The rows the service merged, per step, with every example kept."""
    lines: list[str] = []
    for s in service_merged(tallies, brief=False):
        lines.append(f"- {s.step}: {s.text}")
        lines += [f"  - {_md(x)}" for x in s.examples]
    return ["", "## Rows the service merged", "", *lines] if lines else []


def guards_section(summary: dict[str, Any]) -> list[str]:
    """The steps whose source-volume guard tripped (``summary["guards"]``), as a section."""
    guards = summary.get("guards") or []
    if not guards:
        return []
    did = {
        "skip_step": "step skipped: nothing sent, nothing deleted",
        "skip_deletes": "mirror deletes refused",
        "alert": "alert only (no mirror deletes to refuse)",
    }
    lines = ["## Volume guards", ""]
    for g in guards:
        what = "no rows" if g["kind"] == "empty" else f"{g['current']} rows"
        lines.append(
            f"- step {g['step']}: the source has {what} against {g['previous']} in the last"
            f" healthy runs (max drop {g['threshold']:.0%}): {did.get(g['action'], g['action'])}"
        )
    return [*lines, ""]


def _reasons(summary: dict[str, Any], tallies: list[StepTally]) -> list[str]:
    """Each failure reason group: its rows, a few of them by name, and its next step."""
    found = groups(tallies, str(summary.get("report_dir") or "<this directory>"))
    if not found:
        return []
    lines = [
        "",
        "## Top failure reasons",
        "",
        "Each group: how many rows, a few of them (file, row, key: the value), what to do. "
        "Every row's own message is in `failures.csv`.",
    ]
    shown = found if len(found) <= ALL_REASONS else found[:TOP_REASONS]
    for g in shown:
        lines += ["", f"**{_md(g.tally.step)}, {g.rows} row{'s' if g.rows != 1 else ''}**: "
                  f"{_md(g.reason)}", ""]
        lines += [f"- {_md(example_text(e))}" for e in g.examples[:MD_EXAMPLES]]
        lines.append(f"- **next step**: {_md(group_step(g))}")
    if len(found) > len(shown):
        rest = found[len(shown) :]
        lines.append(
            f"\n({len(rest)} more reason groups, {sum(g.rows for g in rest)} rows: every "
            "row's own message is in the `_error` column of failures.csv)"
        )
    return lines


def render_report(summary: dict[str, Any], tallies: list[StepTally]) -> str:
    dry = summary.get("dry_run")
    lines = [f"# recordsync run {summary.get('run_id', '')}" + (" (dry run)" if dry else ""), ""]
    lines.append(f"- pipeline: {summary.get('pipeline')}")
    lines.append(f"- target: {summary.get('target')}")
    lines.append(f"- started: {summary.get('started_at')}, finished: {summary.get('finished_at')}")
    if summary.get("retry_of"):
        lines.append(f"- retry of: {summary['retry_of']}")
    for warning in summary.get("warnings") or []:
        lines.append(f"- **warning**: {warning}")
    if summary.get("aborted"):
        lines.append(f"- **aborted**: {summary['aborted']}")
    ok = summary.get("accounting_ok")
    lines.append(f"- accounting: {'ok' if ok else 'MISMATCH'}")
    for err in summary.get("accounting_errors", []):
        lines.append(f"  - {_md(err)}")
    if dry:
        lines.append("- dry run: nothing was written; 'sent' counts the rows that would be sent")
    lines += ["", "## Steps", "", *_table(summary), ""]
    lines += guards_section(summary)
    for t in tallies:
        if t.aborted:
            lines.append(f"- step {t.step} aborted: {_md(t.aborted)}")
        if t.unreconciled_chunks:
            lines.append(
                f"- step {t.step}: {t.unreconciled_chunks} chunk(s) unreconciled (answer did "
                "not match what was sent); their rows are in doubt"
            )
        if t.settled_by_reading:
            lines.append(
                f"- step {t.step}: {t.settled_by_reading} entr(y/ies) read back from the service "
                "after an answer was lost (found: its record taken; absent: resent as it was; "
                "unclear: held in doubt)"
            )
        if t.resent_after_lost_answer:
            lines.append(
                f"- step {t.step}: {t.resent_after_lost_answer} row(s) were resent after a lost "
                "answer (a try that may have been applied); some reported `updated` may have "
                "been created by the lost try"
            )
    lines += _owners(summary)
    lines += _reasons(summary, tallies)
    lines += _merges_and_duplicates(summary)
    lines += _service_merged(tallies)
    lines += _references(tallies)
    suggested = [t for t in tallies if t.suggestions]
    if suggested:
        lines += [
            "",
            "## Suggested value maps",
            "",
            "Add these to the mapping to accept the rows:",
            "",
        ]
        for t in suggested:
            for key, counter in t.suggestions.items():
                lines.append(f"- {t.step} / {_md(key)}:")
                for value, n in counter.most_common(10):
                    lines.append(f"  - `{_md(value)}` ({n} row{'s' if n != 1 else ''})")
    t = summary["totals"]
    if _mirror_deletes_ran(summary):
        lines += [
            "",
            f"Mirror deletes: {t.get('deleted', 0)} record(s) soft-deleted because their rows "
            f"left the source, {t.get('delete_failed', 0)} delete(s) failed.",
        ]
    for step in summary["steps"]:
        if step.get("source_changed_since_interrupted_attempt"):
            how = _md(step["source_changed_since_interrupted_attempt"])
            lines += ["", f"Step {_md(step['step'])} (resumed): {how}."]
        if step.get("mirror_deletes_skipped"):
            why = _md(step["mirror_deletes_skipped"])
            lines += ["", f"Mirror deletes of step {_md(step['step'])} skipped: {why}."]
    lines += readback_sections(summary)
    steps = next_steps(summary)
    if steps:
        lines += ["", "## Next steps", "", *(f"- {_md(step)}" for step in steps)]
    return "\n".join(lines) + "\n"

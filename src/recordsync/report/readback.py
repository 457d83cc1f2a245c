"""report.md's sections on what a run checked after sending: the read-back of a sample of
its records (summary.json ``verify``) and the skill triggered after the run
(``after_run``)."""

from __future__ import annotations

from typing import Any


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def readback_sections(summary: dict[str, Any]) -> list[str]:
    """The "Read-back" and "After the run" sections (none when neither ran)."""
    return _verify(summary.get("verify")) + _after_run(summary.get("after_run"))


def _verify(verify: dict[str, Any] | None) -> list[str]:
    if not verify:
        return []
    if not verify.get("enabled"):
        return ["", "## Read-back", "", f"Not done: {_md(verify.get('why'))}."]
    lines = ["", "## Read-back", ""]
    lines.append(
        f"{verify['records_read']} record(s) read back ({verify['requests']} request(s)): "
        f"{verify['mismatched_records']} differ from what was sent "
        f"({verify['mismatched_fields']} field(s)), {verify['unreadable']} could not be read."
    )
    if verify.get("file"):
        lines.append(f"Every differing field is a line of `{verify['file']}`.")
    if verify.get("stopped"):
        lines.append(f"{_md(verify['stopped'])}.")
    lines += ["", "| step | read | written | unchanged | differ | allowed | unreadable |"]
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for s in verify.get("steps", []):
        flag = " **(over the limit)**" if s.get("failed") else ""
        lines.append(
            f"| {_md(s['step'])} | {s['records_read']} | {s['written_read']} | "
            f"{s['unchanged_read']} | {s['mismatched_records']}{flag} | {s['max_mismatch']} | "
            f"{s['unreadable']} |"
        )
    if verify.get("failed"):
        lines += [
            "",
            "More records differ than a step allows (`verify.max_mismatch`): the run exits 1. "
            "Look at each record in the service: another writer changed it (decide which side "
            "owns the field), a rule of the service rewrote it (map the value as the service "
            "stores it), or it is gone; `--full-refresh` sends every row again.",
            "",
        ]
    for s in verify.get("steps", []):
        for example in s.get("examples", []):
            lines.append(f"- {_md(s['step'])}: {_md(example)}")
        for problem in s.get("problems", []):
            lines.append(f"- {_md(s['step'])} (not compared): {_md(problem)}")
    return lines


def _after_run(after: dict[str, Any] | None) -> list[str]:
    skill = (after or {}).get("skill")
    if not skill:
        return []
    if skill.get("triggered"):
        what = f"triggered (skill run {skill.get('skill_run_id')}, {skill['payload_bytes']} bytes)"
    elif skill.get("error"):
        what = f"**not triggered**: {_md(skill['error'])} (the exit code is the run's)"
    else:
        what = f"not triggered: {_md(skill.get('skipped'))}"
    when = ", ".join(skill.get("when", []))
    return ["", "## After the run", "", f"- skill {skill['id']} (when: {when}): {what}"]

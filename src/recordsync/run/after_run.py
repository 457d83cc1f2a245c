"""``after_run: {skill: ...}``: once the report is written, trigger one of the service's
skills (``POST /api/webhooks/{skillId}``, signed with the API key) with the run's summary,
when the run came to one of the outcomes the pipeline lists.

The payload (:func:`skill_payload`) is the run's summary, capped: the counts per step and in
total, the top :data:`TOP_FAILURES` failure reasons, the ids of up to
:data:`~recordsync.run.written.MAX_CHANGED_IDS` records created or updated (the first ones,
in run order), the read-back's result; at most :data:`MAX_BODY` bytes (ids are dropped
first, then the steps' details, to stay under it).

A trigger that fails (the service answers 4xx/5xx, or cannot be reached) is logged as a
warning and reported (summary.json ``after_run``, a warning at the top of report.md); it
never changes the run's exit code. It is tried again only when the service surely did not
start the skill (no connection, 429, 503), within the client's retry budget: a skill run is
not something to start twice.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from recordsync.config.after_run import SkillTrigger
from recordsync.core.errors import EXIT_OK, EXIT_ROWS_FAILED
from recordsync.report.html import render_html
from recordsync.report.markdown import render_report
from recordsync.report.tally import StepTally
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryBudget

log = logging.getLogger(__name__)

TOP_FAILURES = 10
MAX_REASON = 300
"""Characters of one failure reason in the payload."""
MAX_BODY = 64 * 1024
"""Bytes of the payload at most."""
EVENT = "recordsync.run.finished"
_STEP_KEYS = (
    "step",
    "object_type",
    "rows_read",
    "created",
    "updated",
    "rows_unchanged",
    "failed",
    "rows_not_ok",
    "deleted",
    "aborted",
)


def outcome_of(exit_code: int) -> str:
    """``ok`` (exit 0), ``rows_not_ok`` (exit 1) or ``failed`` (any other code)."""
    if exit_code == EXIT_OK:
        return "ok"
    return "rows_not_ok" if exit_code == EXIT_ROWS_FAILED else "failed"


def wanted(trigger: SkillTrigger, outcome: str) -> bool:
    return "always" in trigger.when or outcome in trigger.when


def top_failures(tallies: list[StepTally]) -> list[dict[str, Any]]:
    reasons = [(t.step, r, n) for t in tallies for r, n in t.reasons.items()]
    reasons.sort(key=lambda item: -item[2])
    return [
        {"step": step, "rows": n, "reason": reason[:MAX_REASON]}
        for step, reason, n in reasons[:TOP_FAILURES]
    ]


def skill_payload(
    summary: dict[str, Any],
    exit_code: int,
    tallies: list[StepTally],
    changed: dict[str, dict[str, list[int]]],
) -> dict[str, Any]:
    """The body sent to the skill (see the module's docstring for its caps)."""
    objects = {t.step: t.object_type for t in tallies}
    ids: list[dict[str, Any]] = [
        {"step": step, "object_type": objects.get(step), **lists} for step, lists in changed.items()
    ]
    written = sum(int(summary["totals"].get(k) or 0) for k in ("created", "updated"))
    listed = sum(len(x["created"]) + len(x["updated"]) for x in ids)
    verify = summary.get("verify") or {}
    payload: dict[str, Any] = {
        "event": EVENT,
        "run_id": summary.get("run_id"),
        "pipeline": summary.get("pipeline"),
        "target": summary.get("target"),
        "outcome": outcome_of(exit_code),
        "exit_code": exit_code,
        "started_at": summary.get("started_at"),
        "finished_at": summary.get("finished_at"),
        "report_dir": summary.get("report_dir"),
        "aborted": summary.get("aborted"),
        "totals": summary.get("totals"),
        "steps": [{k: s.get(k) for k in _STEP_KEYS} for s in summary.get("steps", [])],
        "top_failures": top_failures(tallies),
        "changed_records": ids,
        "changed_records_listed": listed,
        "changed_records_truncated": listed < written,
        "verify": {k: v for k, v in verify.items() if k != "steps"},
    }
    return _capped(payload)


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def _capped(payload: dict[str, Any]) -> dict[str, Any]:
    """Under :data:`MAX_BODY` bytes: record ids halved until it fits, then no steps."""
    while len(encode(payload)) > MAX_BODY:
        ids = payload["changed_records"]
        if any(x["created"] or x["updated"] for x in ids):
            for x in ids:
                for kind in ("created", "updated"):
                    x[kind] = x[kind][: len(x[kind]) // 2]
            payload["changed_records_listed"] = sum(
                len(x["created"]) + len(x["updated"]) for x in ids
            )
            payload["changed_records_truncated"] = True
        elif payload["steps"]:
            payload["steps"] = []
            payload["changed_records"] = []
        else:
            payload["top_failures"] = payload["top_failures"][:1]
            break
    return payload


def trigger(
    client: RecordServiceClient, skill: SkillTrigger, payload: dict[str, Any]
) -> dict[str, Any]:
    """Trigger the skill; what happened, for summary.json's ``after_run.skill``."""
    body = encode(payload)
    out: dict[str, Any] = {
        "id": skill.id,
        "when": list(skill.when),
        "outcome": payload["outcome"],
        "triggered": False,
        "payload_bytes": len(body),
    }
    budget = RetryBudget(client.retry)
    while True:
        attempt = client.trigger_skill(skill.id, body)
        verdict = attempt.verdict
        if verdict.kind == "ok":
            answer = attempt.body if isinstance(attempt.body, dict) else {}
            run_id = answer.get("skillRunId")
            out.update(triggered=True, skill_run_id=run_id if isinstance(run_id, str) else None)
            log.info("skill %s triggered (skill run %s)", skill.id, out["skill_run_id"])
            return out
        surely_not_started = verdict.kind in ("retriable", "rate_limited") and not (
            verdict.maybe_applied
        )
        wait = budget.next_wait(verdict) if surely_not_started else None
        if wait is None:
            what = verdict.describe
            if verdict.status == 404:
                what += " (is the skill id right, and the skill live?)"
            elif verdict.status == 401:
                what += " (the service refused the key or the signature)"
            out["error"] = what
            log.warning("skill %s was not triggered: %s", skill.id, what)
            return out
        budget.wait(wait)


def skill_warning(outcome: dict[str, Any]) -> str | None:
    """The report's warning for a trigger that failed (None: it did not fail)."""
    if outcome.get("error") is None:
        return None
    return (
        f"the skill {outcome['id']} (after_run) was not triggered: {outcome['error']}; the run's "
        "exit code is unchanged"
    )


def rewrite(report_dir: Path, summary: dict[str, Any], tallies: list[StepTally]) -> None:
    """summary.json, report.md and report.html again, with what happened after the run."""
    tmp = report_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, report_dir / "summary.json")
    (report_dir / "report.md").write_text(render_report(summary, tallies), encoding="utf-8")
    (report_dir / "report.html").write_text(render_html(summary, tallies), encoding="utf-8")

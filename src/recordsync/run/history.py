"""The end of a run with state: its health conditions, the alert they change, its history
record and the retention (:mod:`recordsync.state.history` keeps them).

Health conditions (each ``{id, reason}``; what raises one is the pipeline's
``notify.alert_on``, its defaults without a ``notify:`` section):

    failed        the run failed or was aborted (exit 2 or more)
    rows_not_ok   more rows not ok than ``alert_on.rows_not_ok`` (a count, or a share of the
                  rows read; default: any)
    volume        a step's source volume guard tripped (:mod:`recordsync.run.volume`)
    runtime       the run took longer than ``alert_on.runtime_over`` (default: no limit)

The alert state is the set of condition ids the last run of the pipeline and target left
standing. A message goes out only when it changes: ``alert_raised`` (the conditions now
standing, and those cleared), or ``alert_resolved`` once a run raises none. A message no
webhook took leaves the old state, so the next run sends it again.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from recordsync.config.unattended import AlertOn, HistorySettings, NotifySettings
from recordsync.core.errors import EXIT_ROWS_FAILED
from recordsync.run.notify import RAISED, RESOLVED, Delivery, deliver
from recordsync.run.runner import RunResult
from recordsync.state.history import HistoryRecord, RunHistory
from recordsync.state.store import StateStore
from recordsync.state.targets import pipeline_of

log = logging.getLogger(__name__)

TOP_REASONS = 5
STEP_KEYS = (
    "step",
    "mapping",
    "object_type",
    "rows_read",
    "created",
    "updated",
    "rows_unchanged",
    "rows_invalid",
    "rows_duplicate",
    "failed",
    "in_doubt",
    "not_sent",
    "deleted",
    "delete_failed",
    "rows_not_ok",
)


def conditions(
    result: RunResult, alert_on: AlertOn, runtime: float | None = None
) -> list[dict[str, str]]:
    """The health conditions ``result`` raises (see the module docstring)."""
    summary = result.summary
    totals = summary.get("totals") or {}
    code = result.exit_code
    out: list[dict[str, str]] = []
    if alert_on.failed and code > EXIT_ROWS_FAILED:
        why = summary.get("aborted") or (str(result.error) if result.error else "")
        reason = f"the run stopped (exit {code})" + (f": {why}" if why else "")
        out.append({"id": "failed", "reason": reason})
    not_ok = int(totals.get("rows_not_ok", 0)) + int(totals.get("delete_failed", 0))
    read = int(totals.get("rows_read", 0))
    if alert_on.rows_not_ok_over(not_ok, read):
        share = f" ({not_ok / read:.1%})" if read else ""
        out.append(
            {
                "id": "rows_not_ok",
                "reason": f"{not_ok} of {read} rows not ok{share}, above"
                f" alert_on.rows_not_ok {alert_on.rows_not_ok}",
            }
        )
    guards = summary.get("guards") or []
    if alert_on.volume_drop and guards:
        parts = [
            f"step {g['step']}: {g['current']} rows against {g['previous']} ({g['action']})"
            for g in guards
        ]
        out.append({"id": "volume", "reason": "source volume dropped: " + "; ".join(parts)})
    limit = alert_on.runtime_over
    if limit is not None and runtime is not None and runtime > float(limit):
        out.append(
            {
                "id": "runtime",
                "reason": f"the run took {runtime:.1f} s, above alert_on.runtime_over"
                f" {float(limit):g} s",
            }
        )
    return out


def top_reasons(result: RunResult, limit: int = TOP_REASONS) -> list[dict[str, Any]]:
    """The most frequent reasons rows were not ok, grouped as report.md groups them:
    ``{step, reason, rows}``, most rows first."""
    counts: Counter[tuple[str, str]] = Counter()
    for tally in result.tallies:
        for reason, n in tally.reasons.items():
            counts[(tally.step, reason)] += n
    return [
        {"step": step, "reason": reason[:500], "rows": n}
        for (step, reason), n in counts.most_common(limit)
    ]


def message(
    event: str,
    result: RunResult,
    raised: list[dict[str, str]],
    cleared: list[str],
) -> dict[str, Any]:
    """The alert message (the generic shape): what the run was, what changed, its counts,
    its report and the top reasons rows were not ok."""
    summary = result.summary
    return {
        "event": event,
        "run_id": summary.get("run_id"),
        "pipeline": pipeline_of(str(summary.get("pipeline") or "")),
        "target": summary.get("target"),
        "started_at": summary.get("started_at"),
        "finished_at": summary.get("finished_at"),
        "exit_code": result.exit_code,
        "conditions": raised,
        "resolved": cleared,
        "counts": summary.get("totals") or {},
        "steps": [{k: s.get(k) for k in STEP_KEYS if k != "mapping"} for s in summary["steps"]],
        "guards": summary.get("guards") or [],
        "report": str(result.report_dir),
        "top_reasons": top_reasons(result),
        "stopped": summary.get("aborted"),
    }


def record_run(
    store: StateStore,
    state_key: str,
    result: RunResult,
    *,
    notify: NotifySettings | None,
    history: HistorySettings,
    whole_run: bool,
    runtime: float | None,
    env: Mapping[str, str],
    http: httpx.Client | None = None,
) -> list[Delivery]:
    """Keep the run in the history, send the alert its change of state calls for, prune what
    the retention lets go; the deliveries made (none when nothing changed)."""
    alert_on = notify.alert_on if notify is not None else AlertOn()
    raised = conditions(result, alert_on, runtime)
    runs = RunHistory(store)
    last = runs.last(state_key)
    before = list(last.alerted) if last is not None else []
    now = [c["id"] for c in raised]
    alerted = now
    deliveries: list[Delivery] = []
    if set(now) != set(before) and notify is not None:
        cleared = sorted(set(before) - set(now))
        try:
            msg = message(RAISED if now else RESOLVED, result, raised, cleared)
            deliveries = deliver(notify, msg, env, client=http)
        except Exception as exc:  # an alert never changes the run's outcome
            log.error("the alert could not be sent: %s", type(exc).__name__)
        if not any(d.delivered for d in deliveries):
            alerted = before  # not told: the next run sends it again
    summary = result.summary
    guarded = {g["step"] for g in summary.get("guards") or []}
    steps = [
        {
            **{k: s.get(k) for k in STEP_KEYS},
            "aborted": bool(s.get("aborted")),
            "guarded": s.get("step") in guarded,
            "partial": bool(s.get("incremental_window")),
        }
        for s in summary["steps"]
    ]
    runs.record(
        HistoryRecord(
            run_id=str(summary["run_id"]),
            pipeline=pipeline_of(state_key),
            state_key=state_key,
            target=summary.get("target"),
            started_at=str(summary["started_at"]),
            finished_at=summary.get("finished_at"),
            exit_code=result.exit_code,
            report_dir=str(result.report_dir),
            whole_run=whole_run,
            steps=steps,
            totals=dict(summary.get("totals") or {}),
            conditions=raised,
            alerted=alerted,
        )
    )
    cutoff = datetime.now(UTC) - timedelta(days=history.retention_days)
    pruned = runs.prune(state_key, cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if pruned:
        log.info("history: %d runs older than %d days pruned", pruned, history.retention_days)
    return deliveries

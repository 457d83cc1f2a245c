"""Helpers of the report tests."""

from __future__ import annotations

from recordsync.report.tally import StepTally, totals


def summary_of(tallies: list[StepTally]) -> dict[str, object]:
    """summary.json of a finished (not dry) run r1 made of ``tallies``, as the renderers read it."""
    return {
        "run_id": "r1",
        "steps": [t.as_json(False) for t in tallies],
        "totals": totals(tallies),
        "accounting_ok": True,
        "report_dir": "reports/r1",
    }

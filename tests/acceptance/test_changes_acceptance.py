"""Acceptance: a nightly run after one cell of the leads export changed sends that row only
(a change the mapping trims away is no change)."""

from __future__ import annotations

from pathlib import Path

from .support import (
    all_records,
    lead_rows,
    recordsync,
    report_of,
    results,
    sandbox,
    summary,
    write_leads,
)


def test_next_run_sends_only_the_changed_row(tmp_path: Path) -> None:
    rows = lead_rows()
    pipeline = write_leads(tmp_path, rows)
    with sandbox(tmp_path / "sb.db") as url:
        first = recordsync("run", pipeline, "--base-url", url, cwd=tmp_path)
        assert first.code == 1, first.err
        rows[0][5] = "55"  # line 2: lead score 0 -> 55
        rows[1][3] = "  Head of Data  "  # line 3: only whitespace, trimmed by the mapping
        write_leads(tmp_path, rows)
        second = recordsync("run", pipeline, "--base-url", url, cwd=tmp_path)
        stored = all_records(url, "contacts")
    assert second.code == 1, second.err
    latest = report_of(second, tmp_path)  # run ids of the same second sort at random
    assert latest != report_of(first, tmp_path)
    (step,) = summary(latest)["steps"]
    assert (step["rows_unchanged"], step["rows_sent"], step["created"], step["updated"]) == (
        51,
        1,
        0,
        1,
    )
    sent = [(r["source_row"], r["status"]) for r in results(latest) if r["status"] != "unchanged"]
    assert ("2", "updated") in sent and len([s for s in sent if s[1] == "updated"]) == 1
    assert len(stored) == 52
    zoe = next(r for r in stored if r["email"] == "zoe.muller0@expo.example")
    assert zoe["lead_score"] == 55

"""The totals of a report are the sums of its steps, in summary.json, report.md and report.html;
``sent`` counts the rows that went out, never those reported ``not sent`` after a stop."""

from __future__ import annotations

import io
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report import writer as writer_module
from recordsync.report.progress import PlainProgress
from recordsync.report.tally import COUNT_KEYS, StepTally, totals, totals_errors
from recordsync.report.writer import NOT_SENT_PREFIX, ReportWriter
from recordsync.run.runner import RunResult

from .support import assert_totals_are_step_sums, md_steps_table

KINDS = (
    "created",
    "updated",
    "merged_sent",
    "merge_held",
    "failed_sent",
    "rejected",
    "not_sent",
    "in_doubt",
    "invalid",
    "duplicate",
    "unchanged",
)
"""What became of a row, as a step reports it (``*_sent``/``rejected``: sent, then failed or
found merged; ``not_sent``: failed without being sent, the run stopped first)."""
WENT_OUT = ("created", "updated", "merged_sent", "failed_sent", "rejected", "in_doubt")

step_counts = st.fixed_dictionaries({k: st.integers(0, 4) for k in KINDS})


def _row(n: int, status: RowStatus) -> PreparedRow:
    payload = {"name": f"R{n}"} if status in (RowStatus.VALID, RowStatus.MERGED) else None
    return PreparedRow(SourceRow("in.csv", n, {"Name": f"R{n}"}), status, payload)


def write_steps(directory: Path, steps: list[dict[str, int]], *, dry_run: bool = False) -> Any:
    """A report of steps with these counts, written row by row as the runner writes them (its
    counters: ``read``, and ``sent`` = rows to send, the not sent ones included)."""
    writer = ReportWriter(directory, dry_run=dry_run)
    n = 1
    for i, counts in enumerate(steps):
        tally = StepTally(f"step{i}", f"m{i}.yaml", "contacts")
        writer.start_step(tally)
        plan: list[tuple[RowStatus, RowStatus, str | None]] = [
            (RowStatus.VALID, RowStatus.CREATED, None),
            (RowStatus.VALID, RowStatus.UPDATED, None),
            (RowStatus.VALID, RowStatus.MERGED, "found on the record of row 2"),
            (RowStatus.MERGED, RowStatus.MERGED, "would fold into row 2"),
            (RowStatus.VALID, RowStatus.FAILED, "HTTP 503: Service unavailable"),
            (RowStatus.VALID, RowStatus.FAILED, "Validation failed: email: invalid email"),
            (RowStatus.VALID, RowStatus.FAILED, f"{NOT_SENT_PREFIX}run aborted: stop"),
            (RowStatus.VALID, RowStatus.IN_DOUBT, "in doubt: lost answer"),
            (RowStatus.INVALID, RowStatus.INVALID, "column 'Email': not an e-mail"),
            (RowStatus.DUPLICATE, RowStatus.DUPLICATE, "duplicate key email: row 2"),
            (RowStatus.UNCHANGED, RowStatus.UNCHANGED, None),
        ]
        for kind, (prepared, outcome, error) in zip(KINDS, plan, strict=True):
            for _ in range(counts[kind]):
                n += 1
                tally.read += 1
                if kind not in ("merge_held", "invalid", "duplicate", "unchanged"):
                    tally.sent += 1
                writer.record(tally, _row(n, prepared), outcome, None, error)
    return writer.finish({"run_id": "r1", "report_dir": str(directory)})


@given(st.lists(step_counts, min_size=1, max_size=4))
def test_any_step_counts_give_totals_that_are_the_sums_of_the_steps(
    steps: list[dict[str, int]],
) -> None:
    with TemporaryDirectory() as tmp:
        summary = write_steps(Path(tmp) / "run", steps)
        assert summary["accounting_ok"], summary["accounting_errors"]
        assert_totals_are_step_sums(Path(tmp) / "run")
        rows, total = md_steps_table((Path(tmp) / "run" / "report.md").read_text("utf-8"))
    for counts, row, step in zip(steps, rows, summary["steps"], strict=True):
        went_out = sum(counts[k] for k in WENT_OUT)
        assert (step["rows_sent"], step["not_sent"]) == (went_out, counts["not_sent"])
        assert (int(row["sent"]), int(row["not sent"])) == (went_out, counts["not_sent"])
        # every row read is one of: invalid, duplicate, merge held, unchanged, not sent, sent
        parts = ("invalid", "duplicate", "merge held", "unchanged", "not sent", "sent")
        assert int(row["read"]) == sum(int(row[c]) for c in parts)
    assert int(total["sent"]) == sum(sum(c[k] for k in WENT_OUT) for c in steps)


@given(step_counts)
def test_the_progress_line_says_the_sent_of_the_report(counts: dict[str, int]) -> None:
    with TemporaryDirectory() as tmp:
        summary = write_steps(Path(tmp) / "run", [counts])
    tally = StepTally("step0", "m0.yaml", "contacts", read=summary["steps"][0]["rows_read"])
    tally.sent = summary["steps"][0]["rows_sent"] + summary["steps"][0]["not_sent"]
    tally.not_sent = summary["steps"][0]["not_sent"]
    out = io.StringIO()
    PlainProgress(out).step_finished(tally)
    assert f", sent {summary['steps'][0]['rows_sent']}, " in out.getvalue()


def test_a_run_stopped_before_anything_was_sent_reports_sent_0(tmp_path: Path) -> None:
    """The defect: every row reported ``not sent`` after a wrong key was counted as sent."""
    summary = write_steps(tmp_path / "run", [{**dict.fromkeys(KINDS, 0), "not_sent": 4}] * 3)
    t = summary["totals"]
    assert (t["rows_read"], t["not_sent"], t["rows_sent"], t["failed"]) == (12, 12, 0, 12)
    _, total = md_steps_table((tmp_path / "run" / "report.md").read_text("utf-8"))
    assert (total["read"], total["not sent"], total["sent"], total["failed"]) == (
        "12",
        "12",
        "0",
        "12",
    )


def test_a_dry_run_counts_valid_rows_as_sent_and_the_rows_not_checked_apart(
    tmp_path: Path,
) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=True)
    tally = StepTally("s", "m.yaml", "contacts", read=3, sent=3)
    writer.start_step(tally)
    writer.record(tally, _row(2, RowStatus.VALID), RowStatus.VALID)
    for n in (3, 4):
        writer.record(tally, _row(n, RowStatus.VALID), RowStatus.FAILED, None, "not sent: x")
    summary = writer.finish({"run_id": "r1"})
    assert summary["accounting_ok"], summary["accounting_errors"]
    assert (summary["totals"]["rows_sent"], summary["totals"]["not_sent"]) == (1, 2)
    assert_totals_are_step_sums(tmp_path / "run")


@pytest.mark.parametrize("key", COUNT_KEYS)
def test_totals_errors_names_every_count_that_is_not_the_sum(key: str) -> None:
    a, b = StepTally("a", "a.yaml", "contacts", read=2), StepTally("b", "b.yaml", "deals", read=3)
    summary: dict[str, Any] = {
        "steps": [a.as_json(False), b.as_json(False)],
        "totals": totals([a, b]),
    }
    assert totals_errors(summary) == []
    summary["totals"][key] += 1
    summed = sum(s[key] for s in summary["steps"])
    assert totals_errors(summary) == [
        f"totals: {key} is {summed + 1} but the steps add up to {summed}"
    ]


def test_the_writer_refuses_totals_that_are_not_the_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Totals computed some other way than from the steps: an accounting mismatch (exit 1)."""

    def to_send(tallies: list[StepTally]) -> dict[str, int]:  # the defect's kind of total
        out = totals(tallies)
        out["rows_sent"] = sum(t.sent for t in tallies)
        return out

    monkeypatch.setattr(writer_module, "totals", to_send)
    summary = write_steps(tmp_path / "run", [{**dict.fromkeys(KINDS, 0), "not_sent": 2}])
    assert summary["accounting_errors"] == ["totals: rows_sent is 2 but the steps add up to 0"]
    assert not summary["accounting_ok"]
    assert RunResult(summary, tmp_path / "run").exit_code == 1
    assert "MISMATCH" in (tmp_path / "run" / "report.md").read_text("utf-8")


def test_a_total_missing_from_the_totals_is_named_as_zero() -> None:
    a = StepTally("a", "a.yaml", "contacts", read=2)
    summary: dict[str, Any] = {"steps": [a.as_json(False)], "totals": totals([a])}
    del summary["totals"]["rows_read"]
    assert totals_errors(summary) == ["totals: rows_read is 0 but the steps add up to 2"]

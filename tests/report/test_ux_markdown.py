"""report.md: where the rest of the reason groups are, and resends after a lost answer."""

from __future__ import annotations

from pathlib import Path

from tests.report.support import summary_of

from recordsync.report.markdown import ALL_REASONS, TOP_REASONS, render_report
from recordsync.report.tally import StepTally


def _tally_with_groups(n: int) -> StepTally:
    t = StepTally("contacts", "contacts.yaml", "contacts")
    for i in range(n):
        # distinct rules (field names differ), so each is its own group
        t.add_reason(f"column 'C{i}' → field 'f{i}': 'x' must be <= 100")
    return t


def test_a_few_reason_groups_are_all_listed() -> None:
    t = _tally_with_groups(TOP_REASONS + 3)
    md = render_report(summary_of([t]), [t])
    for i in range(TOP_REASONS + 3):
        assert f"field 'f{i}'" in md
    assert "more reason groups" not in md


def test_many_reason_groups_point_to_where_the_messages_really_are(tmp_path: Path) -> None:
    n = ALL_REASONS + 5
    t = _tally_with_groups(n)
    md = render_report(summary_of([t]), [t])
    assert f"({n - TOP_REASONS} more reason groups, {n - TOP_REASONS} rows:" in md
    assert "`_error` column of failures.csv" in md
    assert "more reason groups in failures.csv" not in md  # failures.csv has no groups


def test_resends_after_a_lost_answer_are_noted_per_step() -> None:
    t = StepTally("contacts", "contacts.yaml", "contacts", read=5, sent=5)
    t.resent_after_lost_answer = 3
    quiet = StepTally("companies", "companies.yaml", "companies")
    md = render_report(summary_of([t, quiet]), [t, quiet])
    assert (
        "- step contacts: 3 row(s) were resent after a lost answer (a try that may have been "
        "applied); some reported `updated` may have been created by the lost try"
    ) in md
    assert "step companies: 0" not in md and "step companies:" not in md
    assert summary_of([t])["steps"][0]["resent_after_lost_answer"] == 3  # type: ignore[index]

"""report.md shows mirror-delete counts (summary.json ``deleted``/``delete_failed``), only
for runs in which mirror deletes ran."""

from __future__ import annotations

from tests.report.support import summary_of

from recordsync.report.markdown import render_report
from recordsync.report.tally import StepTally, totals


def _rows(md: str) -> dict[str, list[str]]:
    """The steps table: header and one row per step (and the total), cells stripped."""
    table = [line for line in md.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    out = {}
    for line in table[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells
    out["head"] = head
    return out


def test_mirror_delete_counts_are_columns_of_the_steps_table() -> None:
    companies = StepTally("companies", "companies.yaml", "companies", read=4, sent=4)
    companies.deleted, companies.delete_failed = 3, 1
    deals = StepTally("deals", "deals.yaml", "deals", read=2, sent=2)
    deals.deleted = 2
    md = render_report(summary_of([companies, deals]), [companies, deals])
    rows = _rows(md)
    head = rows["head"]
    assert head[-2:] == ["deleted", "delete failed"]
    assert rows["companies"][-2:] == ["3", "1"]
    assert rows["deals"][-2:] == ["2", "0"]
    assert rows["**total**"][-2:] == ["5", "1"]
    assert len(rows["**total**"]) == len(head)
    assert (
        "Mirror deletes: 5 record(s) soft-deleted because their rows left the source, "
        "1 delete(s) failed." in md
    )
    assert "- failed mirror deletes are in the run's log" in md


def test_no_delete_columns_when_mirror_deletes_did_not_run() -> None:
    t = StepTally("contacts", "contacts.yaml", "contacts", read=5, sent=5)
    md = render_report(summary_of([t]), [t])
    assert "deleted" not in md and "delete failed" not in md
    assert "Mirror deletes" not in md
    assert "## Next steps" not in md


def test_a_summary_without_delete_keys_still_renders() -> None:
    """An older summary.json (no ``deleted`` key in totals) renders as before."""
    t = StepTally("contacts", "contacts.yaml", "contacts", read=1, sent=1)
    summary = summary_of([t])
    summary["totals"] = {k: v for k, v in totals([t]).items() if not k.startswith("delete")}
    md = render_report(summary, [t])
    assert "| **total** |" in md and "deleted" not in md

"""The two accounting equations of a step (report/tally.py), each one alone failing."""

from __future__ import annotations

from recordsync.model import RowStatus
from recordsync.report.tally import StepTally


def tally(read: int, sent: int, **outcomes: int) -> StepTally:
    t = StepTally("contacts", "configs/contacts.yaml", "contacts", read=read, sent=sent)
    for status, n in outcomes.items():
        t.outcomes[RowStatus(status)] = n
    return t


def test_balanced_counts_pass_both_checks() -> None:
    t = tally(6, 4, created=1, updated=1, failed=1, in_doubt=1, invalid=1, duplicate=1)
    assert t.accounting_errors(dry_run=False) == []
    assert tally(3, 2, valid=2, invalid=1).accounting_errors(dry_run=True) == []


def test_rows_sent_that_differ_from_their_outcomes_fail_the_second_check() -> None:
    """read = invalid + duplicate + unchanged + outcomes holds (3 = 1 + 2), but 3 rows were
    counted as sent and only 2 came back with an outcome: only the second check sees it."""
    t = tally(3, 3, created=1, updated=1, invalid=1)
    assert t.accounting_errors(dry_run=False) == [
        "step contacts: 3 rows sent but 2 created + updated + failed + in_doubt"
    ]
    assert t.as_json(dry_run=False)["accounting_ok"] is False


def test_every_sent_outcome_counts_in_the_second_check() -> None:
    for status in ("created", "updated", "failed", "in_doubt"):
        assert tally(1, 1, **{status: 1}).accounting_errors(dry_run=False) == []
        assert tally(1, 0, **{status: 1}).accounting_errors(dry_run=False) == [
            "step contacts: 0 rows sent but 1 created + updated + failed + in_doubt"
        ]


def test_a_dry_run_checks_sent_against_valid_rows() -> None:
    t = tally(3, 3, valid=2, invalid=1)
    assert t.accounting_errors(dry_run=True) == ["step contacts: 3 rows sent but 2 valid"]


def test_rows_read_that_differ_from_the_outcomes_fail_the_first_check() -> None:
    t = tally(4, 2, created=2, unchanged=1)
    assert t.accounting_errors(dry_run=False) == [
        "step contacts: 4 rows read but 3 outcomes written (3 invalid + duplicate + unchanged"
        " + sent)"
    ]

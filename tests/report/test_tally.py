"""The two accounting equations of a step (report/tally.py), each one alone failing."""

from __future__ import annotations

from recordsync.core.model import RowStatus
from recordsync.report.tally import MAX_REASONS, StepTally


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
        "step contacts: 3 rows sent but 2 created + updated + merged + failed + in_doubt"
    ]
    assert t.as_json(dry_run=False)["accounting_ok"] is False


def test_every_sent_outcome_counts_in_the_second_check() -> None:
    for status in ("created", "updated", "merged", "failed", "in_doubt"):
        assert tally(1, 1, **{status: 1}).accounting_errors(dry_run=False) == []
        assert tally(1, 0, **{status: 1}).accounting_errors(dry_run=False) == [
            "step contacts: 0 rows sent but 1 created + updated + merged + failed + in_doubt"
        ]


def test_a_merged_row_held_before_sending_counts_in_the_first_check_only() -> None:
    t = tally(2, 1, created=1, merged=1)
    t.merge_held = 1  # predicted to fold into another row's record: not sent
    assert t.accounting_errors(dry_run=False) == []
    assert (t.counts()["rows_merged"], t.counts()["merged"]) == (1, 0)
    t.merge_held = 0  # the same outcome counted as sent: the second check sees 1 row too many
    assert t.accounting_errors(dry_run=False) == [
        "step contacts: 1 rows sent but 2 created + updated + merged + failed + in_doubt"
    ]


def test_a_dry_run_checks_sent_against_valid_rows() -> None:
    t = tally(3, 3, valid=2, invalid=1)
    assert t.accounting_errors(dry_run=True) == ["step contacts: 3 rows sent but 2 valid"]


def test_rows_read_that_differ_from_the_outcomes_fail_the_first_check() -> None:
    t = tally(4, 2, created=2, unchanged=1)
    assert t.accounting_errors(dry_run=False) == [
        "step contacts: 4 rows read but 3 outcomes written (3 invalid + duplicate + merged (held)"
        " + unchanged + sent)"
    ]


def test_an_outcome_outside_both_equations_fails_the_first_check() -> None:
    """2 read, 2 sent, 2 created, and one more outcome (``valid`` has no place in a real
    run): the equations' terms add up, the outcomes do not."""
    t = tally(2, 2, created=2, valid=1)
    assert t.accounting_errors(dry_run=False) == [
        "step contacts: 2 rows read but 3 outcomes written (2 invalid + duplicate + merged (held)"
        " + unchanged + sent)"
    ]


def test_the_step_json_has_every_documented_key_and_its_own_run_kind() -> None:
    t = tally(3, 3, valid=3)
    t.settled_by_reading, t.resent_after_lost_answer, t.unreconciled_chunks = 4, 5, 6
    data = t.as_json(dry_run=True)
    assert data["accounting_ok"] is True and t.as_json(dry_run=False)["accounting_ok"] is False
    assert (data["step"], data["mapping"], data["object_type"]) == (
        "contacts",
        "configs/contacts.yaml",
        "contacts",
    )
    assert (data["settled_by_reading"], data["resent_after_lost_answer"]) == (4, 5)
    assert (data["unreconciled_chunks"], data["aborted"]) == (6, None)
    assert set(data) == {
        "step", "mapping", "object_type", "rows_read", "rows_invalid", "rows_duplicate",
        "rows_merged", "rows_unchanged", "rows_sent", "created", "updated", "merged", "failed",
        "in_doubt", "not_sent", "chunks", "deleted", "delete_failed", "rows_not_ok",
        "unreconciled_chunks", "settled_by_reading", "resent_after_lost_answer",
        "rejected_values", "aborted", "owners", "mirror_deletes_skipped",
        "source_changed_since_interrupted_attempt", "duplicates_expected", "accounting_ok",
    }  # fmt: skip


def test_reasons_past_the_cap_are_counted_as_other_reasons() -> None:
    t = tally(0, 0)
    for i in range(MAX_REASONS):
        t.add_reason(f"reason {i}")
    t.add_reason("reason 0")  # a known group is still counted in its own place
    t.add_reason("one reason too many")
    t.add_reason("and another")
    assert len(t.reasons) == MAX_REASONS + 1
    assert t.reasons["reason 0"] == 2 and t.reasons["(other reasons)"] == 2
    assert "one reason too many" not in t.reasons


def test_an_incremental_pass_says_which_rows_it_read() -> None:
    """A step that read a cursor's window: ``incremental_window`` in its summary (the
    history does not take its ``rows_read`` as the source's volume); a whole read: none."""
    t = tally(3, 0, unchanged=3)
    assert "incremental_window" not in t.as_json(False)
    t.window = "rows with updated_at from 2026-11-28T00:00:00Z"
    assert t.as_json(False)["incremental_window"] == t.window

"""Reason groups hide data values and keep the rule's own words (messages as the mapping
stage and the service really produce them)."""

from __future__ import annotations

import pytest

from recordsync.report.tally import StepTally, reason_group

# (message a, message b, the group both must fall into)
SAME_GROUP = [
    (
        "column 'Probability' → field 'probability': '120' must be <= 100",
        "column 'Probability' → field 'probability': '250' must be <= 100",
        "column 'Probability' → field 'probability': '…' must be <= 100",
    ),
    (
        "column 'Newsletter' → field 'newsletter_opt_in': 'maybe' is not a boolean "
        "(yes/no, true/false, y/n, 1/0)",
        "column 'Newsletter' → field 'newsletter_opt_in': 'perhaps' is not a boolean "
        "(yes/no, true/false, y/n, 1/0)",
        "column 'Newsletter' → field 'newsletter_opt_in': '…' is not a boolean "
        "(yes/no, true/false, y/n, 1/0)",
    ),
    (
        "column 'Employees' → field 'employee_count': 'about 50' is not a number "
        "(decimal separator '.', thousands separator ',')",
        "column 'Employees' → field 'employee_count': 'n/a' is not a number "
        "(decimal separator '.', thousands separator ',')",
        "column 'Employees' → field 'employee_count': '…' is not a number "
        "(decimal separator '.', thousands separator ',')",
    ),
    (
        "column 'Score' → field 'lead_score': '87.5' must have at most 0 decimal places",
        "column 'Score' → field 'lead_score': '1.25' must have at most 0 decimal places",
        "column 'Score' → field 'lead_score': '…' must have at most 0 decimal places",
    ),
    (
        "column 'Last Contacted' → field 'last_contacted': '31/02/2025' does not match "
        "date_format '%d/%m/%Y' (or is no such date)",
        "column 'Last Contacted' → field 'last_contacted': '30/02/2024' does not match "
        "date_format '%d/%m/%Y' (or is no such date)",
        "column 'Last Contacted' → field 'last_contacted': '…' does not match "
        "date_format '%d/%m/%Y' (or is no such date)",
    ),
    (
        "column 'Owner' → owner: 'zoe@acme.example' is not a known owner "
        "(not in the users listing or owners file)",
        "column 'Owner' → owner: 'max@acme.example' is not a known owner "
        "(not in the users listing or owners file)",
        "column 'Owner' → owner: '…' is not a known owner "
        "(not in the users listing or owners file)",
    ),
    (
        "duplicate key email:kwame.ito1@nimbus.com: row 122 has the same key and wins "
        "(duplicates: last)",
        "duplicate key email:ana@x.example: row 7 has the same key and wins (duplicates: last)",
        "duplicate key email:…: row N has the same key and wins (duplicates: last)",
    ),
    (
        "duplicate key name:Acme: Corp: also on row 4 (duplicates: fail)",
        "duplicate key name:Globex: also on row 19 (duplicates: fail)",
        "duplicate key name:…: also on row N (duplicates: fail)",
    ),
    (
        "line 303: malformed line: expected 13 cells, found 14",
        "line 9: malformed line: expected 13 cells, found 12",
        "line N: malformed line: expected 13 cells, found N",
    ),
    # the service's ``Validation failed: <field>: <reason>``
    (
        "Validation failed: lead_score: must be <= 100",
        "Validation failed: lead_score: must be <= 100",
        "Validation failed: lead_score: must be <= 100",
    ),
    (
        "Validation failed: company_id: no companies record 42",
        "Validation failed: company_id: no companies record 7",
        "Validation failed: company_id: no companies record N",
    ),
    (
        "Validation failed: stage: 'Won' is not an option (lead, qualified, customer)",
        "Validation failed: stage: 'Lost' is not an option (lead, qualified, customer)",
        "Validation failed: stage: '…' is not an option (lead, qualified, customer)",
    ),
    (
        "in doubt: POST /api/objects/contacts/batch: HTTP 500: boom (after 4 tries)",
        "in doubt: POST /api/objects/contacts/batch: HTTP 500: boom (after 2 tries)",
        "in doubt: POST /api/objects/contacts/batch: HTTP 500: boom (after N tries)",
    ),
]


@pytest.mark.parametrize(("a", "b", "group"), SAME_GROUP)
def test_reason_group_hides_values_and_keeps_the_rule(a: str, b: str, group: str) -> None:
    assert reason_group(a) == group
    assert reason_group(b) == group


def test_different_limits_and_separators_stay_different_groups() -> None:
    assert reason_group("Validation failed: score: must be <= 100") != reason_group(
        "Validation failed: score: must be <= 10"
    )
    comma = "column 'A' → field 'a': 'x' is not a number (decimal separator ',')"
    dot = "column 'A' → field 'a': 'x' is not a number (decimal separator '.')"
    assert reason_group(comma) != reason_group(dot)
    assert reason_group("pipeline 'nightly' is already running") == (
        "pipeline 'nightly' is already running"
    )


def test_uuids_and_dates_are_data() -> None:
    a = reason_group(
        "column 'Owner' → field 'owned_by_user_id': 6f1c2a3b-0001-4000-8000-000000000009 is not "
        "a user id of this organization"
    )
    assert "<uuid>" in a and "6f1c2a3b" not in a
    b = reason_group(
        "column 'S' → field 's': '03/04/2025' is not a YYYY-MM-DD date; it reads as 2025-04-03 "
        "with date_format: '%m/%d/%Y' — declare it"
    )
    assert "2025" not in b and "date_format: '%m/%d/%Y'" in b


def test_tally_counts_rows_per_group() -> None:
    t = StepTally("contacts", "contacts.yaml", "contacts")
    for v in ("120", "150", "999"):
        t.add_reason(f"column 'Score' → field 'lead_score': '{v}' must be <= 100")
    t.add_reason("column 'Score' → field 'lead_score': '1.5' must have at most 0 decimal places")
    assert t.reasons["column 'Score' → field 'lead_score': '…' must be <= 100"] == 3
    assert len(t.reasons) == 2


def test_reference_messages_keep_the_mapping_and_pipeline_names() -> None:
    msg = (
        "company_id: no 'companies' record with key {} in the ledger of pipeline 'nightly' "
        "(that key was never synced)"
    )
    a = reason_group(msg.format("'auroralogistics.com'"))
    assert a == reason_group(msg.format("'acme.example'"))
    assert a == (
        "company_id: no 'companies' record with key '…' in the ledger of pipeline 'nightly' "
        "(that key was never synced)"
    )

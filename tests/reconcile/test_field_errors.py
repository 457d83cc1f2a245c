"""A service validation error told as the source row's: columns, cells, value sent, next step.

The sandbox rejects nothing the dry run lets through except what only the service can know
(e.g. a record id that does not exist: tests/e2e/test_rejected_values_e2e.py); a hosted
service stricter than its schema says is the case here, with the answer made up."""

from __future__ import annotations

from typing import Any

import yaml
from tests.report.support import summary_of

from recordsync.config.models import MappingConfig
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.reconcile.field_errors import FIX, FieldSources, is_rejected_value
from recordsync.report.markdown import render_report
from recordsync.report.tally import StepTally

MAPPING = """\
object_type: contacts
source: {path: people.csv}
name: {template: "{First} {Last}"}
owner: {column: Owner}
profile_image_url: Photo
fields:
  phone: Mobile
  lifecycle_stage: {value: lead}
"""


def explain(error: str, cells: dict[str, Any], fields: dict[str, Any]) -> str:
    mapping = MappingConfig.model_validate(yaml.safe_load(MAPPING))
    payload = {"name": "Ann Lee", "fields": fields, "profile_image_url": "ftp://x"}
    row = PreparedRow(SourceRow("people.csv", 7, cells), RowStatus.VALID, payload)  # type: ignore[arg-type]
    return FieldSources(mapping).explain(row, error)


def test_the_phone_the_service_rejects_names_the_column_and_the_value() -> None:
    out = explain(
        "Validation failed: phone: invalid phone number", {"Mobile": "12"}, {"phone": "12"}
    )
    assert out == f"column 'Mobile' value '12' → phone: invalid phone number ({FIX})"
    assert "retry without a fix fails the same way" in out
    assert is_rejected_value(out)


def test_the_value_sent_is_shown_when_it_is_not_the_cell() -> None:
    out = explain(
        "Validation failed: phone: invalid phone number", {"Mobile": " 12 "}, {"phone": "12"}
    )
    assert out.startswith("column 'Mobile' value ' 12 ' (sent '12') → phone: ")


def test_templates_constants_owner_and_the_image() -> None:
    cells = {"First": "Ann", "Last": "Lee", "Owner": "Zed", "Photo": "ftp://x"}
    name = explain("Validation failed: name: too long", cells, {})
    assert name.startswith("column 'First' value 'Ann', column 'Last' value 'Lee' (sent 'Ann Lee')")
    stage = explain("Validation failed: lifecycle_stage: 'lead' is not an option (x)", cells, {
        "lifecycle_stage": "lead"
    })
    assert stage.startswith("a constant value (sent 'lead') → lifecycle_stage: 'lead' is not")
    owner = explain("Validation failed: owned_by_user_id: unknown user", cells, {
        "owned_by_user_id": "u-1"
    })
    assert owner.startswith("column 'Owner' value 'Zed' (sent 'u-1') → owned_by_user_id: ")
    image = explain("Validation failed: profile_image_url: invalid URL", cells, {})
    assert image.startswith("column 'Photo' value 'ftp://x' → profile_image_url: invalid URL")


def test_other_errors_are_left_as_the_service_gave_them() -> None:
    for error in (
        "Validation failed: match_by: must be one of id, email, name",  # not a mapped field
        "in doubt: timeout",
        "HTTP 503: Service unavailable",
    ):
        assert explain(error, {}, {}) == error
    assert is_rejected_value("Validation failed: match_by: must be one of id, email, name")
    assert not is_rejected_value("HTTP 503: Service unavailable")


def test_long_cells_are_cut() -> None:
    out = explain("Validation failed: phone: invalid phone number", {"Mobile": "9" * 500}, {})
    assert "'" + "9" * 70 in out and "9" * 100 not in out and "…" in out


def test_report_md_offers_a_fix_for_rejected_values_and_a_retry_only_for_the_rest() -> None:
    t = StepTally("contacts", "contacts.yaml", "contacts", read=3, sent=3)
    t.outcomes[RowStatus.FAILED] = 2
    t.rejected = 2
    md = render_report(summary_of([t]), [t])
    assert "2 failed row(s) have a value the service rejected" in md
    assert "fix the value in the source or the mapping" in md
    assert "recordsync retry" not in md
    t.outcomes[RowStatus.FAILED] = 3  # one more failed for a transient reason
    md = render_report(summary_of([t]), [t])
    assert "resend the other failed and in-doubt rows (transient errors" in md
    assert "`recordsync retry reports/r1`" in md


def test_rejected_values_group_by_column_field_and_rule_not_by_value() -> None:
    from recordsync.report.tally import reason_group

    a = explain("Validation failed: phone: invalid phone number", {"Mobile": "12"}, {"phone": "12"})
    b = explain(
        "Validation failed: phone: invalid phone number", {"Mobile": " 3 4 "}, {"phone": "3 4"}
    )
    assert "(sent '3 4')" in b
    assert reason_group(a) == reason_group(b) == (
        f"column 'Mobile' value '…' → phone: invalid phone number ({FIX})"
    )

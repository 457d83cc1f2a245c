"""A step's tally of owners, reason examples and references, as summary.json shows them."""

from __future__ import annotations

from recordsync.core.model import SourceRow
from recordsync.report.tally import StepTally, reason_group


def tally() -> StepTally:
    return StepTally("contacts", "m", "contacts")


def test_owners_are_counted_by_how_they_were_found() -> None:
    t = tally()
    t.read = 5
    for resolution in ("users:email", "users:email", None):
        t.add_owner(resolution)
    counts = t.owner_counts()
    assert counts["by_email"] == 2 and counts["not_looked_up"] == 3
    t.add_owner("a new way")  # a resolution without an outcome name keeps its own
    assert t.owners["a new way"] == 1


def test_rows_not_looked_up_are_never_negative_nor_invented() -> None:
    t = tally()
    t.read = 1
    t.add_owner("users:email")
    assert t.owner_counts()["not_looked_up"] == 0


def test_an_example_keeps_the_value_its_message_quotes() -> None:
    t = tally()
    message = "field 'lead_score': '120' must be <= 100"
    t.add_reason(message, SourceRow("f.csv", 3, {"Score": "120"}))
    (example,) = t.examples[reason_group(message)]
    assert (example.source_file, example.source_row, example.column, example.value) == (
        "f.csv",
        3,
        None,
        "120",
    )


def test_references_are_in_the_summary_only_when_there_are_some() -> None:
    t = tally()
    assert "references" not in t.as_json(False)
    t.refs["company"] = {"resolved": 2}
    assert t.as_json(False)["references"] == {"company": {"resolved": 2}}

"""The report writer's less travelled paths: quoted unchanged blocks, merge and suggestion
tallies at their limits, and a report directory that cannot be written."""

from __future__ import annotations

import csv
import errno
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from recordsync.core.errors import RunAborted
from recordsync.core.model import PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.report.tally import StepTally, reason_group
from recordsync.report.writer import MAX_EXAMPLES, ReportWriter, report_write_error
from recordsync.tuning import spill

ODD = 'f,"\r\nx'  # every character csv.writer quotes


def block(source_file: str, lines: list[int], by: str | None, value: str | None) -> UnchangedBlock:
    n = len(lines)
    return UnchangedBlock(
        source_file, lines, None, [f"k{i}" for i in lines], [by] * n, [value] * n, [7] * n
    )


def results(directory: Path) -> list[list[str]]:
    with open(directory / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.reader(f))[1:]


@pytest.mark.parametrize(("name", "by", "value"), [("a.csv", "email", "a@x.io"), (ODD, ODD, ODD)])
def test_unchanged_blocks_read_back_cell_for_cell(
    tmp_path: Path, name: str, by: str, value: str
) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False, list_unchanged=True)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record_block(tally, block(name, [2, 3], by, value))
    writer.record_block(tally, block(name, [5], None, None))
    writer.finish({})
    assert results(tmp_path / "run") == [
        ["contacts", name, "2", by, value, "unchanged", "7", ""],
        ["contacts", name, "3", by, value, "unchanged", "7", ""],
        ["contacts", name, "5", "", "", "unchanged", "7", ""],
    ]
    assert tally.outcomes[RowStatus.UNCHANGED] == 3 == writer.lines_written


def prepared(n: int, payload: dict[str, Any] | None, **kw: Any) -> PreparedRow:
    return PreparedRow(SourceRow("in.csv", n, {"Name": f"R{n}"}), RowStatus.VALID, payload, **kw)


def test_merges_are_counted_and_their_examples_capped(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    keyed = {"name": "K", "match_by": "email", "match_value": "k@x.io"}
    writer.record(tally, prepared(1, keyed), RowStatus.UPDATED, 500)  # found by its key
    for n in range(2, 2 + MAX_EXAMPLES + 2):  # sent to create, each merged into record 1
        writer.record(tally, prepared(n, {"name": f"R{n}"}), RowStatus.UPDATED, 1)
    assert tally.merged_creates == MAX_EXAMPLES + 2
    assert len(tally.merged_examples) == MAX_EXAMPLES
    assert tally.merged_examples[0] == "in.csv:2 sent to create, merged into record 1"
    assert tally.shared_records == MAX_EXAMPLES + 1  # every row after the first on record 1
    assert len(tally.shared_examples) == MAX_EXAMPLES
    assert tally.shared_examples[0] == "in.csv:3 landed on record 1, like row 2"
    writer.finish({})


def test_suggestions_are_tallied_by_field_and_kind(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    error = "column 'Stage' → field 'stage': 'Custmer' is not an option"
    for n in range(1, MAX_EXAMPLES + 3):
        suggestions = {"field": "stage", "value_map": {f"v{n}": "customer"}, "closest": 1.0}
        writer.record(
            tally, prepared(n, None, suggestions=suggestions), RowStatus.FAILED, None, error
        )
    writer.record(
        tally,
        prepared(99, None, suggestions={"encoding": "cp1252"}),
        RowStatus.FAILED,
        None,
        "not UTF-8",
    )
    value_map = tally.value_maps["stage"]
    assert value_map["column"] == "Stage"
    assert value_map["value_map"] == {f"v{n}": "customer" for n in range(1, MAX_EXAMPLES + 1)}
    assert tally.suggestions == {
        "stage / value_map": Counter({f"v{n}: customer": 1 for n in range(1, MAX_EXAMPLES + 3)}),
        "stage / closest": Counter({"1": MAX_EXAMPLES + 2}),
        "encoding": Counter({"cp1252": 1}),
    }
    writer.finish({})


def test_a_report_that_cannot_be_written_stops_the_run(tmp_path: Path) -> None:
    exc = report_write_error(tmp_path, OSError(errno.ENOSPC, "No space left on device"))
    assert isinstance(exc, RunAborted)
    assert str(exc).startswith(
        f"cannot write the report in {tmp_path}: No space left on device (errno {errno.ENOSPC})"
        "; the run stopped"
    )
    assert exc.hint == (
        "free space on that disk (or give another --report-dir), then run again: a nightly sync"
        " with its state store resumes where this run stopped"
    )
    bare = report_write_error(tmp_path, OSError("lost mount"))
    assert str(bare).startswith(f"cannot write the report in {tmp_path}: lost mount; the run")


class Full:
    """A text file on a full disk."""

    closed = False

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self) -> None:
        self.closed = True
        raise OSError(errno.ENOSPC, "No space left on device")


def test_writes_and_closes_on_a_full_disk_abort_and_abandon_still_closes(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer._results_file._file.close()  # the real file, replaced by one on a full disk
    writer._results_file._file = Full()  # type: ignore[assignment]
    with pytest.raises(RunAborted, match="No space left on device"):
        writer.record(tally, prepared(1, {"name": "R1"}), RowStatus.CREATED, 1)
    writer.abandon()  # the full disk's error is not raised again, and the spool is closed
    assert writer._spool.closed and writer._results_file.closed
    writer.abandon()  # twice is harmless


def test_a_failed_close_aborts(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    writer._spool._file.close()
    writer._spool._file = Full()  # type: ignore[assignment]
    with pytest.raises(RunAborted, match=r"^cannot write the report in .*No space left"):
        writer.finish({})


def test_a_failure_without_a_message_has_an_empty_error_cell(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record(tally, prepared(4, None), RowStatus.IN_DOUBT)
    writer.finish({})
    with open(tmp_path / "run" / "failures.csv", newline="", encoding="utf-8") as f:
        assert list(csv.DictReader(f)) == [
            {
                "Name": "R4",
                "_error": "",
                "_step": "contacts",
                "_source_row": "4",
                "_status": "in_doubt",
                "_source_file": "in.csv",
            }
        ]


def test_each_outcome_is_tallied_by_what_it_says(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    value = {"k": "é", "on": date(2026, 1, 2)}
    keyed = prepared(1, {"name": "A", "match_by": "email", "match_value": value})
    keyed.owner_resolution = "users:email"
    writer.record(tally, keyed, RowStatus.CREATED, 9)
    held = PreparedRow(SourceRow("in.csv", 2, {}), RowStatus.MERGED)
    for _ in range(2):
        writer.record(tally, held, RowStatus.MERGED, None, "merged into row 1")
    writer.record(tally, prepared(4, {"name": "D"}), RowStatus.MERGED, None, "merged")
    for n in (5, 6):
        writer.record(tally, prepared(n, None), RowStatus.FAILED, None, "not sent: aborted")
        writer.record(tally, prepared(n, None), RowStatus.FAILED, None, "Validation failed: x: y")
    writer.record(tally, prepared(7, None), RowStatus.IN_DOUBT, None, "not sent: held")
    writer.record(tally, prepared(8, None), RowStatus.IN_DOUBT, None, "Validation failed: x: y")
    writer.record(tally, prepared(9, None), RowStatus.UNCHANGED, 12)
    writer.record(tally, prepared(10, {"name": "U"}), RowStatus.UPDATED, 12)
    assert (tally.merge_held, tally.not_sent, tally.rejected) == (2, 2, 2)
    assert tally.owners["by_email"] == 1 and tally.shared_records == 0
    example = tally.examples[reason_group("Validation failed: x: y")][0]
    assert (example.source_file, example.source_row) == ("in.csv", 5)
    writer.finish({})
    first = results(tmp_path / "run")[0]
    assert first[3:5] == ["email", '{"k": "é", "on": "2026-01-02"}']


def test_a_record_created_then_updated_by_another_row_is_shared(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record(tally, prepared(3, {"name": "A"}), RowStatus.CREATED, 9)
    writer.record(tally, prepared(5, {"name": "A"}), RowStatus.UPDATED, 9)
    assert tally.shared_examples == ["in.csv:5 landed on record 9, like row 3"]
    writer.finish({})


def test_suggestions_without_a_field_make_no_value_map_and_repeat_counts(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    for n in (1, 2):
        row = prepared(n, None, suggestions={"value_map": {"a": "b"}})
        writer.record(tally, row, RowStatus.FAILED, None, "bad")
    assert tally.value_maps == {}
    assert tally.suggestions == {"value_map": Counter({"a: b": 2})}
    writer.finish({})


def test_records_shared_across_a_spilled_block_are_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record ids of created rows go to disk past a block (here 2 records)."""
    monkeypatch.setattr(spill, "BLOCK", 2)
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    for n, rid in ((3, 9), (4, 10), (5, 11), (6, 12)):
        writer.record(tally, prepared(n, {"name": "A"}), RowStatus.CREATED, rid)
    writer.record(tally, prepared(7, {"name": "A"}), RowStatus.UPDATED, 9)
    writer.record(tally, prepared(8, {"name": "A"}), RowStatus.UPDATED, 13)
    assert writer._record_rows.spilled >= 2
    assert tally.shared_examples == ["in.csv:7 landed on record 9, like row 3"]
    writer.finish({})


def unchanged(n: int) -> PreparedRow:
    return PreparedRow(SourceRow("in.csv", n, {"Name": f"R{n}"}), RowStatus.UNCHANGED)


def test_unchanged_rows_are_counted_not_listed_by_default(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    tally.read = tally.sent = 1
    writer.record(tally, unchanged(2), RowStatus.UNCHANGED, 7)
    writer.record(tally, unchanged(3), RowStatus.UNCHANGED, 8)
    writer.record_block(tally, block("in.csv", [4, 5, 6], "email", "a@x.io"))
    writer.record_block(tally, block("in.csv", [9], None, None))
    created = PreparedRow(SourceRow("in.csv", 10, {}), RowStatus.VALID, {"name": "A"})
    writer.record(tally, created, RowStatus.CREATED, 11)
    tally.read += 6
    assert writer.unlisted == 6 and writer.lines_written == 1
    summary = writer.finish({})
    assert [r[2] for r in results(tmp_path / "run")] == ["10"]
    assert tally.outcomes[RowStatus.UNCHANGED] == 6
    assert summary["accounting_ok"], summary["accounting_errors"]


def test_results_lines_that_disagree_with_the_outcomes_name_the_unlisted_rows(
    tmp_path: Path,
) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    writer.record_block(tally, block("in.csv", [2, 3], None, None))
    tally.outcomes[RowStatus.CREATED] += 1  # an outcome without its results line
    errors = writer.finish({})["accounting_errors"]
    assert "0 lines in results.csv and 2 unchanged rows not listed for 3 outcomes" in errors
    listed = ReportWriter(tmp_path / "listed", dry_run=False, list_unchanged=True)
    listed.start_step(tally := StepTally("contacts", "m", "contacts"))
    listed.record_block(tally, block("in.csv", [2, 3], None, None))
    tally.outcomes[RowStatus.CREATED] += 1
    assert "2 lines in results.csv for 3 outcomes" in listed.finish({})["accounting_errors"]


def test_a_failing_rows_reason_keeps_its_status_and_match_key(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("contacts", "m", "contacts")
    writer.start_step(tally)
    sent = {"match_by": "email", "match_value": 4.0, "fields": {}}
    writer.record(tally, prepared(2, sent), RowStatus.FAILED, None, "HTTP 500 boom")
    writer.record(tally, prepared(3, {"fields": {}}), RowStatus.IN_DOUBT, None, "timed out")
    writer.finish({})
    [(failed, examples), (doubt, doubted)] = tally.examples.items()
    assert tally.reason_status == {failed: RowStatus.FAILED, doubt: RowStatus.IN_DOUBT}
    assert [e.key for e in examples] == ["email 4"] and [e.key for e in doubted] == [None]


def test_a_missing_reference_names_the_not_ok_row_it_points_at(tmp_path: Path) -> None:
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    companies = StepTally("companies", "m", "companies")
    writer.start_step(companies)
    company = PreparedRow(SourceRow("co.csv", 4, {"Domain": "Acme.com"}), RowStatus.INVALID)
    writer.record(companies, company, RowStatus.INVALID, None, "bad domain")
    contacts = StepTally("contacts", "m", "contacts")
    writer.start_step(contacts)
    missing = "no 'companies' record with key 'acme.com'"
    writer.record(contacts, prepared(2, {"fields": {}}), RowStatus.FAILED, None, missing)
    writer.finish({})
    found = contacts.parents[("companies", "acme.com")]
    assert (found.source_file, found.source_row, found.error) == ("co.csv", 4, "bad domain")
    assert companies.parents == {}

"""Each failure reason group gets its own next step, from its rows (report.md, report.html and
the run's console summary show it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.report.group_steps import group_step, groups
from recordsync.report.markdown import render_report
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter

from .support import summary_of

Row = tuple[str, int, dict[str, Any], RowStatus, str]


def _run(tmp_path: Path, steps: dict[str, list[Row]], **maps: dict[str, Any]) -> list[StepTally]:
    """A report written by the report writer: per step, its not-ok rows."""
    writer = ReportWriter(tmp_path / "r1", dry_run=False)
    for step, rows in steps.items():
        tally = StepTally(step, f"configs/{step}.yaml", step)
        writer.start_step(tally)
        for file, line, values, status, error in rows:
            row = PreparedRow(
                SourceRow(file, line, values), status, match_by="name", match_value=f"n{line}"
            )
            if step in maps:
                row.suggestions = maps[step]
            tally.read += 1
            writer.record(tally, row, status, None, error)
    writer.finish({"run_id": "r1"})
    return writer.tallies


def _steps(tallies: list[StepTally]) -> dict[str, str]:
    return {g.reason: group_step(g) for g in groups(tallies, "reports/r1")}


STAGE = "column 'Stage' → field 'stage': '{}' is not an option (lead, customer)"


def test_an_option_with_a_suggestion_gives_the_value_map_to_paste(tmp_path: Path) -> None:
    rows: list[Row] = [
        ("c.csv", 5, {"Stage": "Custmer"}, RowStatus.INVALID, STAGE.format("Custmer"))
    ]
    suggestion = {"field": "stage", "value_map": {"Custmer": "customer"}}
    [step] = _steps(_run(tmp_path, {"contacts": rows}, contacts=suggestion)).values()
    pasted = step.split("`")[5]
    assert "`configs/contacts.yaml`, `fields.stage.value_map`" in step
    assert yaml.safe_load(pasted) == {"Custmer": "customer"}


def test_an_option_without_a_suggestion_lists_the_values_to_map(tmp_path: Path) -> None:
    rows: list[Row] = [
        ("c.csv", n, {"Stage": v}, RowStatus.INVALID, STAGE.format(v))
        for n, v in ((2, "Aerospace"), (3, "yes"))
    ]
    [step] = _steps(_run(tmp_path, {"contacts": rows})).values()
    pasted = yaml.safe_load(step.split("`")[5])
    assert pasted == dict.fromkeys(["Aerospace", "yes"], "<one of: lead, customer>")


def test_an_unknown_owner_gives_the_owners_file_line(tmp_path: Path) -> None:
    error = "column 'Owner' → owner: 'zoe@acme.example' is not a known owner (not in the users"
    rows: list[Row] = [("c.csv", 7, {"Owner": "zoe@acme.example"}, RowStatus.INVALID, error + ")")]
    [step] = _steps(_run(tmp_path, {"contacts": rows})).values()
    assert "`zoe@acme.example: <user e-mail, id or full name>`" in step
    assert "`owner.owners_file` in `configs/contacts.yaml`" in step


def test_an_ambiguous_owner_shows_its_candidates(tmp_path: Path) -> None:
    error = (
        "column 'Owner' → owner: 'Sam Lee' fits 2 users: sam@a.example (id 4), sam.lee@b.example "
        "(id 9); pin the right one in an owners file with a line 'sam lee: <user id>'"
    )
    rows: list[Row] = [("c.csv", 7, {"Owner": "Sam Lee"}, RowStatus.INVALID, error)]
    tallies = _run(tmp_path, {"contacts": rows})
    [step] = _steps(tallies).values()
    assert "'Sam Lee' fits sam@a.example (id 4), sam.lee@b.example (id 9)" in step
    md = render_report(summary_of(tallies), tallies)
    assert "sam.lee@b.example (id 9)" in md  # the group's text hides the e-mails; this does not


def test_a_missing_reference_points_at_the_invalid_parent_row(tmp_path: Path) -> None:
    industry = "column 'Industry' → field 'industry': 'Aerospace' is not an option (software)"
    ref = "company_id: no 'companies' record with key 'aurora.com' in the ledger of pipeline 'n'"
    companies: list[Row] = [
        ("data/companies.csv", 56, {"Website": "https://www.Aurora.com/about"}, RowStatus.INVALID,
         industry),
    ]  # fmt: skip
    deals: list[Row] = [("deals.parquet", 64, {"Domain": "aurora.com"}, RowStatus.INVALID, ref)]
    nowhere = ref.replace("aurora.com", "nowhere.io")
    lonely: list[Row] = [
        ("deals.parquet", 65, {"Domain": "nowhere.io"}, RowStatus.INVALID, nowhere)
    ]
    steps = _steps(_run(tmp_path, {"companies": companies, "deals": deals + lonely}))
    step = steps[next(r for r in steps if "record with key" in r)]
    assert step.startswith("fix the parent row first: companies.csv row 56 of step 'companies'")
    assert "'Aerospace' is not an option" in step

    alone = _steps(_run(tmp_path / "b", {"companies": [], "deals": lonely}))
    [step] = alone.values()
    assert step.startswith("no row of step 'companies' holds 'nowhere.io': add it")


def test_a_duplicate_names_the_row_that_won_and_how_to_keep_the_other(tmp_path: Path) -> None:
    error = "duplicate key email:a@x.io: row 122 has the same key and wins (duplicates: last)"
    rows: list[Row] = [("in/c.csv", 22, {"Email": "a@x.io"}, RowStatus.DUPLICATE, error)]
    [step] = _steps(_run(tmp_path, {"contacts": rows})).values()
    assert step.startswith("c.csv row 22 lost to c.csv row 122 (sent): to keep")
    assert "`duplicates: {keep: last, expected: true}`" in step


def test_sent_rows_say_retry_only_when_a_resend_can_pass(tmp_path: Path) -> None:
    rows: list[Row] = [
        ("c.csv", 2, {"N": "a"}, RowStatus.FAILED, "HTTP 503: service unavailable"),
        ("c.csv", 3, {"N": "b"}, RowStatus.FAILED, "not sent: the run stopped first"),
        ("c.csv", 4, {"N": "c"}, RowStatus.IN_DOUBT, "no answer after 3 tries"),
    ]
    steps = _steps(_run(tmp_path, {"contacts": rows}))
    assert steps["HTTP 503: service unavailable"].endswith("`recordsync retry reports/r1`")
    assert "run again once the stop" in steps["not sent: the run stopped first"]
    assert steps["no answer after N tries"].startswith("check these rows in the target first")


def test_every_group_of_report_md_has_its_next_step_and_named_rows(tmp_path: Path) -> None:
    rows: list[Row] = [
        ("c.csv", n, {"Stage": v}, RowStatus.INVALID, STAGE.format(v))
        for n, v in ((2, "x"), (3, "y"))
    ]
    score = "column 'Score' → field 's': '150' must be <= 100"
    rows.append(("c.csv", 9, {"Score": "150"}, RowStatus.INVALID, score))
    tallies = _run(tmp_path, {"contacts": rows})
    md = render_report(summary_of(tallies), tallies)
    assert md.count("- **next step**: ") == 2
    assert "- c.csv row 2 (name n2): 'x'" in md and "- c.csv row 9 (name n9): '150'" in md


def test_a_reference_by_field_and_an_ambiguous_one_say_what_to_do(tmp_path: Path) -> None:
    by = "company_id: field 'name' = 'Umbrella' fits no row of step 'companies'"
    many = (
        "company_id: field 'name' = 'Acme' fits 2 rows of step 'companies' with different keys"
        " ('a.com', 'b.com'): the reference is ambiguous and was not set"
    )
    invalid = "column 'Size' → field 'employee_count': 'many' is not a number"
    companies: list[Row] = [("co.csv", 4, {"Name": "Umbrella"}, RowStatus.INVALID, invalid)]
    deals: list[Row] = [
        ("d.csv", 2, {"Company": "Umbrella"}, RowStatus.INVALID, by),
        ("d.csv", 3, {"Company": "Acme"}, RowStatus.INVALID, many),
    ]
    steps = _steps(_run(tmp_path, {"companies": companies, "deals": deals}))
    [parent] = [s for r, s in steps.items() if "fits no row" in r]
    assert parent.startswith("fix the parent row first: co.csv row 4 of step 'companies'")
    [ambiguous] = [s for r, s in steps.items() if "with different keys" in r]
    assert ambiguous.startswith("each value fits several rows of step 'companies'")


def test_merged_rows_say_how_to_keep_them_apart(tmp_path: Path) -> None:
    error = "merges into the record of row 4 (same domain a.com)"
    rows: list[Row] = [("co.csv", 9, {"Domain": "a.com"}, RowStatus.MERGED, error)]
    [step] = _steps(_run(tmp_path, {"companies": rows})).values()
    assert "declare `merges: expected` in `configs/companies.yaml`" in step

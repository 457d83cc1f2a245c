"""A value the service rejects: the dry run catches what the rules decide (a phone number);
what only the service can know (a record id that does not exist) fails the row with the source
column, the cell and the value sent, and the report says to fix the value, not to retry."""

from __future__ import annotations

import csv
from pathlib import Path

from recordsync.run.pipeline import run_pipeline

from .support import served, target
from .test_ledger_e2e import request, results, write, write_csv


def pipeline(tmp: Path) -> Path:
    write_csv(
        tmp / "people.csv",
        ["Name", "Email", "Mobile", "CompanyId"],
        [
            ["Ann", "ann@x.example", "+1 555 0100", ""],
            ["Ben", "ben@x.example", "+1 555 0101", " 999 "],
            ["Cy", "cy@x.example", "12", ""],
        ],
    )
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email, phone: Mobile, company_id: CompanyId}\n",
    )
    return write(tmp / "people-sync.yaml", "steps: [people.yaml]\n")


def failures(report_dir: Path) -> dict[str, str]:
    with open(report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        return {row["Name"]: row["_error"] for row in csv.DictReader(f)}


def test_a_rejected_value_names_column_cell_and_value_sent_and_is_not_offered_a_retry(
    tmp_path: Path,
) -> None:
    path = pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, path, dry_run=True), target=target(url))
        real = run_pipeline(request(tmp_path, path), target=target(url))
    phone = (
        "column 'Mobile' → field 'phone': '12' is not a phone number (digits, spaces and "
        "+ ( ) . - /, optional x123 or ext 123; 5 to 20 digits)"
    )
    dry_rows = {r["match_value"]: (r["status"], r["error"]) for r in results(dry)}
    assert dry_rows["cy@x.example"] == ("invalid", phone)  # caught before anything is sent
    assert dry_rows["ben@x.example"] == ("valid", "")  # whether id 999 exists: only the service
    rejected = (
        "column 'CompanyId' value ' 999 ' (sent 999) → company_id: no companies record 999 "
        "(rejected by the service: fix the value in the source or the mapping; a retry "
        "without a fix fails the same way)"
    )
    rows = {r["match_value"]: (r["status"], r["error"]) for r in results(real)}
    assert rows == {
        "ann@x.example": ("created", ""),
        "ben@x.example": ("failed", rejected),
        "cy@x.example": ("invalid", phone),
    }
    assert failures(real.report_dir) == {"Ben": rejected, "Cy": phone}
    assert real.exit_code == 1
    assert real.summary["steps"][0]["rejected_values"] == 1
    report = (real.report_dir / "report.md").read_text(encoding="utf-8")
    assert "1 failed row(s) have a value the service rejected" in report
    assert "recordsync retry" not in report  # nothing a retry could fix

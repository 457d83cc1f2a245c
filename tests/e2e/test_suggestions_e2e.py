"""Suggested value maps in report.md after a run over HTTP: a typo of an option is offered,
a value that only shares a word or some letters with one is not."""

from __future__ import annotations

from pathlib import Path

from recordsync.run.pipeline import run_pipeline

from .support import served, target
from .test_ledger_e2e import request, results, write, write_csv


def test_only_confident_value_maps_are_suggested(tmp_path: Path) -> None:
    stages = ["Custmer", "Qualifed", "Leads", "Former Customer", "Closed Lost", "Churn", "Lead"]
    write_csv(
        tmp_path / "people.csv",
        ["Name", "Email", "Stage"],
        [[f"P{i}", f"p{i}@x.example", s] for i, s in enumerate(stages)],
    )
    write(
        tmp_path / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email, lifecycle_stage: Stage}\n",
    )
    pipeline = write(tmp_path / "people-sync.yaml", "steps: [people.yaml]\n")
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert [r["status"] for r in results(result)] == ["invalid"] * 6 + ["created"]
    report = (result.report_dir / "report.md").read_text("utf-8")
    section = report.split("## Suggested value maps", 1)[1].split("\n## ", 1)[0]
    offered = sorted(line.strip() for line in section.splitlines() if line.strip().startswith("-"))
    assert offered == [
        "- `Custmer: customer` (1 row)",
        "- `Leads: lead` (1 row)",
        "- `Qualifed: qualified` (1 row)",
        "- people / lifecycle_stage / value_map:",
    ]

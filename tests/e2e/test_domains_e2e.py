"""``transform: domain`` over HTTP: companies exported with websites written as URLs are
stored with their bare domain; a cell with no domain is an invalid row naming the column
and the value, in failures.csv, and the run exits 1."""

from __future__ import annotations

import csv
from pathlib import Path

from recordsync.run.pipeline import run_pipeline

from .support import all_records, served, target
from .test_ledger_e2e import request, results, write, write_csv


def test_websites_are_stored_as_domains(tmp_path: Path) -> None:
    write_csv(
        tmp_path / "orgs.csv",
        ["Company", "Website"],
        [
            ["Acme", "https://www.Acme.com/about?x=1"],
            ["Beta", "beta.io"],
            ["Gamma", "http://user@gamma.example:8080/"],
            ["Delta", "sales@delta.example"],
            ["Broken", "not a website"],
            ["Empty", ""],
        ],
    )
    write(
        tmp_path / "orgs.yaml",
        "object_type: companies\nsource: {path: orgs.csv}\nname: Company\nmatch_by: [name]\n"
        "fields:\n  domain: {column: Website, transform: domain}\n",
    )
    pipeline = write(tmp_path / "orgs-sync.yaml", "steps: [orgs.yaml]\n")
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        stored = {r["name"]: r["domain"] for r in all_records(url, "companies")}
    assert stored == {
        "Acme": "acme.com",
        "Beta": "beta.io",
        "Gamma": "gamma.example",
        "Delta": "delta.example",
        "Empty": None,
    }
    broken = next(r for r in results(result) if r["match_value"] == "Broken")
    assert broken["status"] == "invalid"
    assert broken["error"] == (
        "column 'Website' → field 'domain': 'not a website' is not a URL, domain or e-mail "
        "address with a domain (e.g. example.com) (transform: domain)"
    )
    with open(result.report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        (failure,) = list(csv.DictReader(f))
    assert failure["Website"] == "not a website" and failure["_status"] == "invalid"
    assert result.exit_code == 1

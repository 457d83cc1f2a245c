"""References by any field (`ref: {step: companies, by: name}`), against the sandbox over
HTTP: companies keyed by domain, contacts naming their company; a name that fits two
companies is ambiguous, an unknown name is not found; the dry run predicts the real run, and
every step's summary.json and report.md count the references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recordsync.core.errors import ConfigError
from recordsync.run.pipeline import run_pipeline

from .support import all_records, loopback_client, served, target
from .test_ledger_e2e import request, results, totals, write, write_csv

COMPANIES = [
    ["Acme Ltd", "https://www.acme.com/"],
    ["Globex", "globex.io"],
    ["Initech", "initech.com"],
    ["INITECH", "initech.io"],  # the same name, folded: the service would fold it (merged)
]
CONTACTS = [
    ["Ann", "ann@x.example", "  acme   LTD "],  # trimmed, whitespace collapsed, case-folded
    ["Ben", "ben@x.example", "Globex"],
    ["Cy", "cy@x.example", "Initech"],  # one record holds that name: INITECH is merged
    ["Di", "di@x.example", "Umbrella"],  # no such company
    ["Ed", "ed@x.example", ""],  # no reference
]


def by_name_pipeline(
    tmp: Path, ref: str = "{step: companies, by: name}", companies: list[list[str]] = COMPANIES
) -> Path:
    write_csv(tmp / "companies.csv", ["Company Name", "Website"], companies)
    write_csv(tmp / "contacts.csv", ["Name", "Email", "Company"], CONTACTS)
    write(
        tmp / "companies.yaml",
        "object_type: companies\nsource: {path: companies.csv}\nname: Company Name\n"
        "fields: {domain: Website}\nledger_key: {column: Website, normalize: domain}\n",
    )
    write(
        tmp / "contacts.yaml",
        "object_type: contacts\nsource: {path: contacts.csv}\nname: Name\nmatch_by: [email]\n"
        f"fields:\n  email: Email\n  company_id:\n    column: Company\n    ref: {ref}\n",
    )
    return write(tmp / "refs.yaml", "name: refs\nsteps: [companies.yaml, contacts.yaml]\n")


def outcomes(result: Any, step: str) -> dict[str, tuple[str, str]]:
    return {
        r["match_value"]: (r["status"], r["error"]) for r in results(result) if r["step"] == step
    }


def test_contacts_refer_to_companies_keyed_by_domain_by_company_name(tmp_path: Path) -> None:
    pipeline = by_name_pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
        companies = {r["domain"]: r["id"] for r in all_records(url, "companies")}
        contacts = {r["name"]: r for r in all_records(url, "contacts")}
    assert contacts["Ann"]["company_id"] == companies["https://www.acme.com/"]
    assert contacts["Ben"]["company_id"] == companies["globex.io"]
    assert contacts["Ed"].get("company_id") is None
    # INITECH would fold into Initech's record (same name once case-folded): it is held as
    # merged, not sent, so one record holds the name and Cy's reference is not ambiguous
    assert contacts["Cy"]["company_id"] == companies["initech.com"]
    assert "initech.io" not in companies
    (held,) = [r for r in results(real) if r["step"] == "companies" and r["source_row"] == "5"]
    assert held["status"] == "merged" and "merges with row 4" in held["error"], held
    assert totals(real, "companies")["rows_merged"] == 1
    assert "Di" not in contacts
    got = outcomes(real, "contacts")
    assert got["cy@x.example"][0] == "created"
    assert got["di@x.example"] == (
        "invalid",
        "company_id: field 'name' = 'Umbrella' fits no row of step 'companies'",
    )
    dry_bad = {k: v for k, v in outcomes(dry, "contacts").items() if v[0] != "valid"}
    assert dry_bad == {k: v for k, v in got.items() if v[0] == "invalid"}
    expected = {
        "step": "companies",
        "by": "field 'name'",
        "on_missing": "fail",
        "set": 3,
        "no_value": 1,
        "not_found": 1,
        "ambiguous": 0,
        "from_service": 0,
    }
    assert totals(dry, "contacts")["references"] == {"company_id": expected}
    assert totals(real, "contacts")["references"] == {"company_id": expected}
    assert "references" not in totals(real, "companies")
    assert real.exit_code == 1
    report = (real.report_dir / "report.md").read_text(encoding="utf-8")
    assert "## References" in report
    assert "| contacts | company_id | companies | field 'name' | 3 | 1 | 1 | 0 |" in report


def test_unset_references_are_counted_and_said_loudly(tmp_path: Path) -> None:
    pipeline = by_name_pipeline(tmp_path, "{step: companies, by: name, on_missing: unset}")
    write_csv(
        tmp_path / "contacts.csv",
        ["Name", "Email", "Company"],
        [["Ann", "ann@x.example", "Nope Inc"], ["Ben", "ben@x.example", "Nada"]],
    )
    with served(tmp_path / "s.db") as url:
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
        contacts = all_records(url, "contacts")
    assert [c.get("company_id") for c in contacts] == [None, None]
    counts = totals(real, "contacts")["references"]["company_id"]
    assert (counts["set"], counts["not_found"], counts["on_missing"]) == (0, 2, "unset")
    report = (real.report_dir / "report.md").read_text(encoding="utf-8")
    assert (
        "- **NO reference matched**: contacts / company_id: 2 value(s) found no record of step"
        " 'companies' by field 'name' (left unset (on_missing: unset))"
    ) in report


def test_by_a_source_column_and_by_domain(tmp_path: Path) -> None:
    pipeline = by_name_pipeline(tmp_path, "{step: companies, by: domain}", COMPANIES[:3])
    write_csv(
        tmp_path / "contacts.csv",
        ["Name", "Email", "Company"],
        [["Ann", "ann@x.example", "ACME.com"], ["Ben", "ben@x.example", "http://globex.io/x"]],
    )
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        write(
            tmp_path / "contacts.yaml",
            (tmp_path / "contacts.yaml")
            .read_text()
            .replace("by: domain}", 'by: "column:Company Name"}'),
        )
        write_csv(
            tmp_path / "contacts.csv",
            ["Name", "Email", "Company"],
            [["Ann", "ann@x.example", "Globex"], ["Ben", "ben@x.example", "acme ltd"]],
        )
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        ids = {r["name"]: r["id"] for r in all_records(url, "companies")}
        contacts = {r["name"]: r["company_id"] for r in all_records(url, "contacts")}
    assert first.exit_code == 0 and second.exit_code == 0
    assert totals(first, "contacts")["references"]["company_id"]["set"] == 2
    assert totals(second, "contacts")["references"]["company_id"]["by"] == "column 'Company Name'"
    assert contacts == {"Ann": ids["Globex"], "Ben": ids["Acme Ltd"]}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("{step: companies, by: city}", "fields.company_id.ref.by: step 'companies' maps no field"),
        (
            '{step: companies, by: "column:City"}',
            "fields.company_id.ref.by: column 'City' is not in the source of step 'companies'",
        ),
    ],
)
def test_a_by_that_names_nothing_is_a_config_error_before_anything_is_sent(
    tmp_path: Path, ref: str, message: str
) -> None:
    pipeline = by_name_pipeline(tmp_path, ref)
    with served(tmp_path / "s.db") as url:
        with pytest.raises(ConfigError) as err:
            run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert all_records(url, "companies") == []
    assert err.value.detail.startswith(message)
    assert err.value.key == "fields.company_id.ref.by"
    assert err.value.file is not None and err.value.file.endswith("contacts.yaml")


@pytest.mark.parametrize("quirks", [None, "hosted"])  # hosted: record ids as strings
def test_lookup_service_finds_records_that_are_not_in_this_run(
    tmp_path: Path, quirks: str | None
) -> None:
    pipeline = by_name_pipeline(tmp_path, "{step: companies, by: name, lookup: service}")
    write_csv(
        tmp_path / "contacts.csv",
        ["Name", "Email", "Company"],
        [
            ["Ann", "ann@x.example", "umbrella  CORP"],  # only in the service
            ["Ben", "ben@x.example", "Umbrella"],  # a substring of it: not the same name
            ["Cy", "cy@x.example", "Hooli"],  # two records of the service
            ["Di", "di@x.example", "Globex"],  # in this run: the run's row wins
            ["Ed", "ed@x.example", "Nobody"],
        ],
    )
    with served(tmp_path / "s.db", quirks=quirks) as url:
        with loopback_client(url) as client:
            path = client.object_path("companies")
            made = [
                int(client.request("PUT", path, json={"name": n, "fields": {"domain": d}})
                    ["data"]["id"])
                for n, d in (("Umbrella Corp", "umbrella.example"), ("Hooli", "hooli.com"),
                             ("Hooli Two", "hooli.io"))
            ]  # fmt: skip
            # updates never deduplicate: two records now share a name
            client.request("PATCH", path, json={"id": made[2], "name": "hooli"})
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
        ids = {r["domain"]: int(r["id"]) for r in all_records(url, "companies")}
        contacts = {r["name"]: r.get("company_id") for r in all_records(url, "contacts")}
    assert contacts == {"Ann": made[0], "Di": ids["globex.io"]}
    got = outcomes(real, "contacts")
    assert got["ben@x.example"] == (
        "invalid",
        "company_id: field 'name' = 'Umbrella' fits no row of step 'companies', nor any record"
        " in the service",
    )
    assert got["cy@x.example"][1] == (
        f"company_id: field 'name' = 'Hooli' fits no row of step 'companies', but 2 records in"
        f" the service (#{made[1]}, #{made[2]}): the reference is ambiguous and was not set"
    )
    dry_bad = {k: v for k, v in outcomes(dry, "contacts").items() if v[0] != "valid"}
    assert dry_bad == {k: v for k, v in got.items() if v[0] == "invalid"}
    for result in (dry, real):
        counts = totals(result, "contacts")["references"]["company_id"]
        assert (counts["set"], counts["from_service"]) == (2, 1)
        assert (counts["not_found"], counts["ambiguous"]) == (2, 1)
    report = (real.report_dir / "report.md").read_text(encoding="utf-8")
    assert "contacts / company_id: 1 of the references set were found among the service" in report

"""Acceptance (issue 12): made-up companies and contacts holding each trap that once lost rows
silently, through the CLI against a served sandbox: a dry run, a run and a rerun. For every
source row, either it has a record of its own holding its values (read back over HTTP and
compared), or it is in failures.csv with a true reason, and then the run does not exit 0.

The traps: company names that differ only by a legal suffix, with different domains
("Davenport LLC" / "Davenport PLC"); one website written two ways ("https://www.acme.com/" /
"acme.com", the ledger key); two users with one full name (owner by name), and owners by
full name in any case; two people sharing an e-mail; phones the service rejects; contacts
that name their company (a reference by name); a URL turned into a domain.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

from .support import KEY, REPO, all_records, recordsync, report_dirs, results, summary

ADA, BEN, CHLOE, DIEGO = (f"6f1c2a3b-000{i}-4000-8000-00000000000{i}" for i in range(1, 5))
TWINS = [("6f1c2a3b-0005-4000-8000-000000000005", "sam@a.example"),
         ("6f1c2a3b-0006-4000-8000-000000000006", "sam@b.example")]  # fmt: skip

COMPANIES = [  # Company, Website, Owner, Phone (line 2 onwards)
    ["Davenport LLC", "https://www.davenport-llc.example/", "ada@acme.example", "+1 555 0100"],
    ["Davenport PLC", "davenport-plc.example", "ben@acme.example", "+1 555 0101"],
    ["Acme Corp", "https://www.acme.com/", "chloe nguyen", "+1 555 0102"],
    ["Acme Corp", "acme.com", "Diego Ramos", "+1 555 0103"],
    ["Globex", "globex.example", "Sam Lee", "+1 555 0104"],
    ["Initech", "http://initech.example/about", "Ben Carter", "+1 555 0105"],
    ["Umbrella", "umbrella.example", "ada@acme.example", "call me"],
]
CONTACTS = [  # Full Name, Email, Phone, Company (line 2 onwards)
    ["Ann Lee", "ann@x.example", "+44 20 7946 0000", "Davenport LLC"],
    ["Bob Stone", "bob@x.example", "12", "Initech"],
    ["Cy Shared", "shared@x.example", "+1 555 0200", "Initech"],
    ["Di Shared", "SHARED@x.example", "+1 555 0201", "Initech"],
    ["Ed Ref", "ed@x.example", "", "  davenport llc "],
    ["Fay Nowhere", "fay@x.example", "+1 555 0202", "Hooli"],
]
# the rows that must not be ok: (step, line) → (status, a fragment of the true reason)
NOT_OK = {
    ("companies", 3): ("merged", "merges with row 2: the service would fold it into"),
    ("companies", 4): ("duplicate", "duplicate ledger key 'acme.com' (column 'Website'): row 5"),
    ("companies", 6): ("invalid", "column 'Owner' → owner: 'Sam Lee' fits 2 users"),
    ("companies", 8): ("invalid", "column 'Phone' → field 'phone': 'call me' is not a phone"),
    ("contacts", 3): ("invalid", "column 'Phone' → field 'phone': '12' is not a phone"),
    ("contacts", 4): ("duplicate", "duplicate key email:shared@x.example: row 5 has the same"),
    ("contacts", 7): ("invalid", "company_id: field 'name' = 'Hooli' fits no row of step"),
}
# what the record of each row that is ok holds
COMPANY_VALUES = {  # line → domain (the URL's), owner
    2: ("davenport-llc.example", ADA),
    5: ("acme.com", DIEGO),
    7: ("initech.example", BEN),
}
CONTACT_COMPANY = {2: 2, 5: 7, 6: 2}  # contact line → the companies line it names

COMPANIES_YAML = """\
object_type: companies
source: {path: companies.csv}
name: Company
ledger_key: {column: Website, normalize: domain}
match_by_ledger_id: true
duplicates: last
owner: {column: Owner, on_unknown: fail}
fields:
  domain: {column: Website, transform: url_domain}
  phone: Phone
"""
CONTACTS_YAML = """\
object_type: contacts
source: {path: contacts.csv}
name: Full Name
match_by: [email]
duplicates: last
fields:
  email: Email
  phone: Phone
  company_id: {column: Company, ref: {step: companies, by: name}}
"""


def write_project(tmp: Path) -> Path:
    for name, header, rows in (
        ("companies.csv", ["Company", "Website", "Owner", "Phone"], COMPANIES),
        ("contacts.csv", ["Full Name", "Email", "Phone", "Company"], CONTACTS),
    ):
        with open(tmp / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
    (tmp / "companies.yaml").write_text(COMPANIES_YAML, encoding="utf-8")
    (tmp / "contacts.yaml").write_text(CONTACTS_YAML, encoding="utf-8")
    pipeline = tmp / "traps.yaml"
    pipeline.write_text("name: traps\nsteps: [companies.yaml, contacts.yaml]\n", "utf-8")
    return pipeline


@contextmanager
def served_with_twins(tmp: Path) -> Iterator[str]:
    """The default seed plus two users called "Sam Lee", served on a loopback port."""
    seed = yaml.safe_load((REPO / "sample_data" / "seed.yaml").read_text("utf-8"))
    seed["users"] += [
        {"id": uid, "full_name": "Sam Lee", "access_level": "member", "email": email}
        for uid, email in TWINS
    ]
    (tmp / "seed.yaml").write_text(yaml.safe_dump(seed), encoding="utf-8")
    app = create_app(tmp / "sb.db", seed=tmp / "seed.yaml", api_key=KEY)
    try:
        with run_in_thread(app) as url:
            yield url
    finally:
        app.state.store.close()


def failures(report_dir: Path) -> dict[tuple[str, int], dict[str, str]]:
    with open(report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        return {(r["_step"], int(r["_source_row"])): r for r in csv.DictReader(f)}


def check(report_dir: Path, held: dict[str, dict[int, dict[str, Any]]], *, dry: bool) -> None:
    """Every source row once in results.csv: a row of NOT_OK has its status and is in
    failures.csv with its reason; every other row is ok and (after a real run) has a record
    of its own holding its values."""
    lines = results(report_dir)
    assert sorted((r["step"], int(r["source_row"])) for r in lines) == sorted(
        [("companies", n) for n in range(2, 2 + len(COMPANIES))]
        + [("contacts", n) for n in range(2, 2 + len(CONTACTS))]
    )
    failed = failures(report_dir)
    assert set(failed) == set(NOT_OK), sorted(failed)
    ids: dict[int, int] = {}  # line of companies → its record id
    owners: dict[str, set[str]] = {"companies": set(), "contacts": set()}
    for line in lines:
        step, n = line["step"], int(line["source_row"])
        if (step, n) in NOT_OK:
            status, reason = NOT_OK[(step, n)]
            assert (line["status"], failed[(step, n)]["_status"]) == (status, status), line
            assert reason in line["error"] and reason in failed[(step, n)]["_error"], line
            continue
        if dry:
            assert line["status"] == "valid", line
            continue
        assert line["status"] in ("created", "updated", "unchanged"), line
        assert line["record_id"] not in owners[step], f"{step} {n} shares its record"
        owners[step].add(line["record_id"])
        record = held[step][int(line["record_id"])]
        if step == "companies":
            name, _, _, phone = COMPANIES[n - 2]
            ids[n] = record["id"]
            assert (record["name"], record["phone"]) == (name, phone)
            assert (record["domain"], record["owned_by_user_id"]) == COMPANY_VALUES[n]
        else:
            name, email, phone, _ = CONTACTS[n - 2]
            assert (record["name"], record["email"]) == (name, email.lower())
            assert record["phone"] == (phone or None)
            company = held["companies"][record["company_id"]]
            assert company["domain"] == COMPANY_VALUES[CONTACT_COMPANY[n]][0], (n, company)


def test_every_trap_row_has_its_own_record_or_a_true_reason(tmp_path: Path) -> None:
    pipeline = write_project(tmp_path)
    runs = {}
    with served_with_twins(tmp_path) as url:
        for tag in ("dry", "run", "rerun"):
            # the re-run lists its unchanged rows too: every source row once in results.csv
            extra = {"dry": ["--dry-run"], "rerun": ["--list-unchanged"]}.get(tag, [])
            done = recordsync("run", pipeline, "--base-url", url, "--report-dir",
                              tmp_path / tag, *extra, cwd=tmp_path, timeout=120)  # fmt: skip
            held = {t: {r["id"]: r for r in all_records(url, t)} for t in ("companies", "contacts")}
            assert done.code == 1, (tag, done.code, done.err)  # rows not ok: never exit 0
            (report_dir,) = report_dirs(tmp_path / tag)
            check(report_dir, held, dry=tag == "dry")
            runs[tag] = (report_dir, held)
            if tag == "dry":
                assert held == {"companies": {}, "contacts": {}}  # a dry run writes nothing
    # one record a row that is ok, no more: "Davenport PLC" did not overwrite "Davenport LLC"
    _, held = runs["rerun"]
    assert len(held["companies"]) == len(COMPANY_VALUES)
    assert len(held["contacts"]) == len(CONTACT_COMPANY)
    assert runs["run"][1] == held  # the rerun changed nothing
    rerun = summary(runs["rerun"][0])
    assert rerun["accounting_ok"] and rerun["totals"]["rows_unchanged"] == 6
    assert rerun["totals"]["rows_not_ok"] == len(NOT_OK)

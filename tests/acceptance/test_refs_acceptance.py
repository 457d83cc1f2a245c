"""Acceptance: the sample pipeline's deals refer to companies (`company_id: {ref: ...}`,
resolved from the companies step's ledger). A dry run and a run without the state store
must not promise or write something the real run would refuse."""

from __future__ import annotations

import csv
from pathlib import Path

from .support import all_records, copy_sample, recordsync, report_dirs, results, sandbox, summary


def test_no_state_run_keeps_or_refuses_references(tmp_path: Path) -> None:
    pipeline = copy_sample(tmp_path)
    with sandbox(tmp_path / "sb.db") as url:
        done = recordsync("run", pipeline, "--no-state", "--base-url", url, cwd=tmp_path)
        deals = all_records(url, "deals")
    if done.code == 2:  # refusing the option is an acceptable answer
        assert "ref" in done.err and "--no-state" in done.err, done.err
        assert deals == []
        return
    assert deals, done.err
    unlinked = [d["name"] for d in deals if d["company_id"] is None]
    assert unlinked == [], f"{len(unlinked)} of {len(deals)} deals have no company_id"


def test_dry_run_predicts_the_rows_the_real_run_rejects(tmp_path: Path) -> None:
    pipeline = copy_sample(tmp_path)
    dry_reports, real_reports = tmp_path / "dry", tmp_path / "real"
    with sandbox(tmp_path / "sb.db") as url:
        dry = recordsync(
            "run", pipeline, "--dry-run", "--base-url", url, "--report-dir", dry_reports,
            cwd=tmp_path,
        )  # fmt: skip
        real = recordsync(
            "run", pipeline, "--base-url", url, "--report-dir", real_reports, cwd=tmp_path
        )
    assert dry.code in (0, 1) and real.code in (0, 1), dry.err + real.err
    (dry_dir,) = report_dirs(dry_reports)
    (real_dir,) = report_dirs(real_reports)
    real_bad = {
        (r["step"], r["source_row"])
        for r in results(real_dir)
        if r["status"] in ("invalid", "duplicate", "failed")
    }
    dry_bad = {(r["step"], r["source_row"]) for r in results(dry_dir) if r["status"] != "valid"}
    assert dry_bad == real_bad
    dry_sent = [s["rows_sent"] for s in summary(dry_dir)["steps"]]
    real_sent = [s["rows_sent"] for s in summary(real_dir)["steps"]]
    assert dry_sent == real_sent


def _write(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def test_contacts_that_name_their_company_link_to_it_or_are_reported(tmp_path: Path) -> None:
    """Companies keyed by domain; contacts name their company as people type it. Every
    contact either holds the id of the one company it names, or is in failures.csv with the
    reason (no such company), and the run does not exit 0. Two companies named alike
    ("Northwind", "NORTHWIND") are one record to the service: the second is held as merged
    (in failures.csv), and the contacts that name it link to the one record."""
    companies = [[f"Company {i:02d} Ltd", f"https://www.c{i:02d}.example/"] for i in range(30)]
    companies += [["Northwind", "northwind.com"], ["NORTHWIND", "northwind.io"]]
    contacts, expect = [], {}
    for i in range(60):
        email = f"p{i}@people.example"
        if i % 10 == 7:
            named, want = f"Company {i:02d} Inc", None  # no such company
        elif i % 10 == 9:
            named, want = " northwind ", "northwind.com"  # NORTHWIND is folded into it
        else:
            named, want = f"  company {i % 30:02d}   LTD", f"c{i % 30:02d}.example"
        contacts.append([f"Person {i}", email, named])
        expect[email] = want
    _write(tmp_path / "companies.csv", ["Company Name", "Website"], companies)
    _write(tmp_path / "contacts.csv", ["Full Name", "Email", "Company"], contacts)
    (tmp_path / "companies.yaml").write_text(
        "object_type: companies\nsource: {path: companies.csv}\nname: Company Name\n"
        "fields: {domain: Website}\nledger_key: {column: Website, normalize: domain}\n",
        encoding="utf-8",
    )
    (tmp_path / "contacts.yaml").write_text(
        "object_type: contacts\nsource: {path: contacts.csv}\nname: Full Name\n"
        "match_by: [email]\nfields:\n  email: Email\n"
        "  company_id: {column: Company, ref: {step: companies, by: name}}\n",
        encoding="utf-8",
    )
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("name: people\nsteps: [companies.yaml, contacts.yaml]\n", "utf-8")
    with sandbox(tmp_path / "sb.db") as url:
        dry = recordsync("run", pipeline, "--dry-run", "--base-url", url, "--report-dir",
                         tmp_path / "dry", cwd=tmp_path, timeout=300)  # fmt: skip
        done = recordsync("run", pipeline, "--base-url", url, "--report-dir", tmp_path / "real",
                          cwd=tmp_path, timeout=300)  # fmt: skip
        by_domain = {r["domain"].split("www.")[-1].rstrip("/"): r["id"]
                     for r in all_records(url, "companies")}  # fmt: skip
        by_email = {r["email"]: r for r in all_records(url, "contacts")}
    assert (dry.code, done.code) == (1, 1), done.err
    (real_dir,) = report_dirs(tmp_path / "real")
    with open(real_dir / "failures.csv", newline="", encoding="utf-8") as f:
        failed = {r["Email"]: r["_error"] for r in csv.DictReader(f) if "Email" in r}
    for email, want in expect.items():
        if want is not None:
            assert email not in failed
            assert by_email[email]["company_id"] == by_domain[want.split("//")[-1]], email
            continue
        assert email not in by_email, email
        reason = failed[email]
        assert "fits no row of step 'companies'" in reason, reason
    with open(real_dir / "failures.csv", newline="", encoding="utf-8") as f:
        merged = [r for r in csv.DictReader(f) if r["_status"] == "merged"]
    assert [r["Website"] for r in merged] == ["northwind.io"]
    assert "northwind.io" not in by_domain
    counts = summary(real_dir)["steps"][1]["references"]["company_id"]
    assert (counts["set"], counts["not_found"], counts["ambiguous"]) == (54, 6, 0)
    (dry_dir,) = report_dirs(tmp_path / "dry")
    assert summary(dry_dir)["steps"][1]["references"] == summary(real_dir)["steps"][1]["references"]
    assert "fits no row of step 'companies'" in done.out + done.err  # a failure group, printed

"""Writes the ``recordsync init`` corpus: exports in the styles of several CRMs and tools.

    python tests/data/init_corpus/make_corpus.py

Each export is described below as columns of (header, expected mapping, kind of values):
the expected mapping is a field name, ``name`` (a name column), ``name.part`` (a first or
last name column of a name template), ``owner``, ``ledger_key`` (the export's own key), a
relationship field (a reference column), or None (a column no field of the default
seed holds: to be left unmapped). ``corpus.yaml`` keeps the expectations; the CSV and
Parquet files are generated from a fixed seed, so running this again writes the same files.
"""

from __future__ import annotations

import csv
import random
from datetime import date, datetime, timedelta
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
R = random.Random(13)
FIRST = ["Ann", "Bob", "Chen", "Dora", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jude", "Kai", "Lena"]
LAST = ["Lee", "Moss", "Nair", "Ortiz", "Park", "Quinn", "Reyes", "Stone", "Tran", "Ueda"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne",
             "Tyrell", "Cyberdyne", "Soylent", "Wonka", "Gringotts", "Oscorp", "Pied Piper"]
OWNERS = ["ada@acme.example", "ben@acme.example", "chloe@acme.example", "diego@acme.example"]
OWNER_NAMES = ["Ada Lovelace", "Ben Carter", "Chloe Nguyen", "Diego Ramos"]
ROWS = 24


def pick(xs: list[str]) -> str:
    return R.choice(xs)


def a_date(lo: int = 2015, hi: int = 2025) -> date:
    return date(lo, 1, 1) + timedelta(days=R.randrange((hi - lo) * 365))


def a_time() -> datetime:
    return datetime(2024, 1, 1, 8, 0) + timedelta(minutes=R.randrange(500_000))


GEN = {
    "first": lambda i: FIRST[i % len(FIRST)],
    "last": lambda i: LAST[i % len(LAST)],
    "full": lambda i: f"{FIRST[i % len(FIRST)]} {LAST[i % len(LAST)]}",
    "email": lambda i: f"{FIRST[i % 12].lower()}.{LAST[i % 10].lower()}{i}@example.com",
    "phone": lambda i: f"+1 555 {R.randrange(100, 999)} {R.randrange(1000, 9999)}",
    "phone_plain": lambda i: f"(555) {R.randrange(100, 999)}-{R.randrange(1000, 9999)}",
    "title": lambda i: pick(["CEO", "CTO", "Buyer", "Sales Manager", "Engineer"]),
    "stage_label": lambda i: pick(["Lead", "Qualified", "Customer", "Churned"]),
    "stage_value": lambda i: pick(["lead", "qualified", "customer", "churned"]),
    "score": lambda i: str(R.randrange(0, 100)),
    "yesno": lambda i: pick(["Yes", "No"]),
    "yn": lambda i: pick(["Y", "N"]),
    "truefalse": lambda i: pick(["true", "false"]),
    "tags_semi": lambda i: pick(["VIP", "VIP;Partner", "Partner", "Newsletter", "Churn risk"]),
    "tags_comma": lambda i: pick(["VIP", "VIP,Partner", "Partner", "Newsletter"]),
    "owner_email": lambda i: OWNERS[i % 4],
    "owner_name": lambda i: OWNER_NAMES[i % 4],
    "company": lambda i: COMPANIES[i % len(COMPANIES)] + pick([" Inc", " Ltd", "", " GmbH"]),
    "company_plain": lambda i: COMPANIES[i % len(COMPANIES)] + f" {i}",
    "url": lambda i: f"https://www.{COMPANIES[i % 15].lower().replace(' ', '')}{i}.com/",
    "bare_domain": lambda i: f"{COMPANIES[i % 15].lower().replace(' ', '')}{i}.com",
    "www_domain": lambda i: f"www.{COMPANIES[i % 15].lower().replace(' ', '')}{i}.com",
    "linkedin": lambda i: "https://www.linkedin.com/company/"
    + f"{COMPANIES[i % 15].lower().replace(' ', '-')}{i}",
    "industry_label": lambda i: pick(["Software", "Retail", "Finance", "Healthcare", "Other"]),
    "industry_value": lambda i: pick(["software", "retail", "finance", "manufacturing"]),
    "employees_comma": lambda i: f"{R.randrange(1, 20)},{R.randrange(100, 999)}",
    "employees": lambda i: str(R.randrange(5, 900)),
    "money_us": lambda i: f"${R.randrange(1, 900)},{R.randrange(100, 999)}.00",
    "money_eu": lambda i: f"{R.randrange(1, 900)}.{R.randrange(100, 999)},{R.randrange(10, 99)}",
    "money_plain": lambda i: f"{R.randrange(1000, 90000)}.{R.randrange(10, 99)}",
    "iso_date": lambda i: a_date().isoformat(),
    "us_date": lambda i: a_date().strftime("%m/%d/%Y"),
    "eu_date": lambda i: a_date().strftime("%d/%m/%Y"),
    "dot_date": lambda i: a_date().strftime("%d.%m.%Y"),
    "iso_time": lambda i: a_time().strftime("%Y-%m-%dT%H:%M:%SZ"),
    "space_time": lambda i: a_time().strftime("%Y-%m-%d %H:%M:%S"),
    "us_time": lambda i: a_time().strftime("%m/%d/%Y %I:%M %p"),
    "deal_stage": lambda i: pick(["Prospecting", "Proposal", "Negotiation", "Won", "Lost"]),
    "percent": lambda i: f"{R.randrange(0, 10) * 10}%",
    "prob": lambda i: str(R.randrange(0, 10) * 10),
    "text": lambda i: pick(["Met at a fair.", "Follow up in Q3", "Referral", "", "Cold call"]),
    "deal": lambda i: f"{COMPANIES[i % 15]} renewal {i}",
    "id": lambda i: str(100_000 + i * 7),
    "zip": lambda i: f"{R.randrange(10000, 99999)}",
    "city": lambda i: pick(["Berlin", "Austin", "Lyon", "Osaka"]),
    "country": lambda i: pick(["Germany", "United States", "France", "Japan"]),
    "source": lambda i: pick(["Web", "Referral", "Event", "Ads"]),
    "rating_word": lambda i: pick(["Hot", "Warm", "Cold"]),
    "ip": lambda i: f"10.0.{R.randrange(0, 255)}.{R.randrange(1, 255)}",
    "pipeline": lambda i: pick(["Sales", "Renewals"]),
    "salutation": lambda i: pick(["Mr.", "Ms.", "Dr.", ""]),
    "middle": lambda i: pick(["J.", "", "Marie", ""]),
    "type_label": lambda i: pick(["* Work", "Home", "* Other"]),
    "site": lambda i: f"https://{FIRST[i % 12].lower()}{i}.example.org/",
    "birthday": lambda i: a_date(1960, 2000).isoformat(),
}
FILES: list[tuple[str, str, list[tuple[str, str | None, str]]]] = [
    ("hubspot_contacts.csv", "contacts", [
        ("Record ID", "ledger_key", "id"), ("First Name", "name.part", "first"),
        ("Last Name", "name.part", "last"), ("Email", "email", "email"),
        ("Phone Number", "phone", "phone"), ("Job Title", "job_title", "title"),
        ("Lifecycle Stage", "lifecycle_stage", "stage_label"),
        ("Contact owner", "owner", "owner_email"), ("Create Date", "signed_up_at", "us_date"),
        ("Original Source", None, "source"),
    ]),
    ("salesforce_leads.csv", "contacts", [
        ("First Name", "name.part", "first"), ("Last Name", "name.part", "last"),
        ("Title", "job_title", "title"), ("Company", "company_id", "company"),
        ("E-mail Address", "email", "email"), ("Mobile Phone", "phone", "phone_plain"),
        ("Lead Owner", "owner", "owner_name"), ("Created Date", "signed_up_at", "eu_date"),
        ("Rating", None, "rating_word"), ("Lead Source", None, "source"),
        ("Zip/Postal Code", None, "zip"), ("Email Opt Out", None, "yesno"),
    ]),
    ("snake_contacts.csv", "contacts", [
        ("first_name", "name.part", "first"), ("last_name", "name.part", "last"),
        ("email_address", "email", "email"), ("phone", "phone", "phone"),
        ("job_title", "job_title", "title"), ("stage", "lifecycle_stage", "stage_value"),
        ("lead_score", "lead_score", "score"), ("newsletter", "newsletter_opt_in", "truefalse"),
        ("last_contacted", "last_contacted", "iso_date"), ("tags", "tags", "tags_semi"),
        ("owner_email", "owner", "owner_email"), ("created_at", "signed_up_at", "iso_time"),
        ("internal_id", "ledger_key", "id"),
    ]),
    ("UPPER_CONTACTS.csv", "contacts", [
        ("NAME", "name", "full"), ("E_MAIL", "email", "email"), ("TELEPHONE", "phone", "phone"),
        ("POSITION", "job_title", "title"), ("SCORE", "lead_score", "score"),
        ("SUBSCRIBED", "newsletter_opt_in", "yn"),
        ("LAST_CONTACT_DATE", "last_contacted", "dot_date"),
        ("SALES_REP", "owner", "owner_email"), ("COUNTRY", None, "country"),
        ("ZIP", None, "zip"),
    ]),
    ("crm_companies.csv", "companies", [
        ("Company Name", "name", "company_plain"), ("Website", "domain", "url"),
        ("Industry", "industry", "industry_label"),
        ("Number of Employees", "employee_count", "employees_comma"),
        ("Annual Revenue", "annual_revenue", "money_us"), ("Founded Date", "founded_on", "us_date"),
        ("LinkedIn Company Page", "linkedin_url", "linkedin"), ("Main Phone", "phone", "phone"),
        ("Company Owner", "owner", "owner_email"), ("City", None, "city"),
        ("Zip/Postal Code", None, "zip"),
    ]),
    ("companies_snake.csv", "companies", [
        ("name", "name", "company_plain"), ("domain", "domain", "bare_domain"),
        ("industry", "industry", "industry_value"),
        ("employee_count", "employee_count", "employees"),
        ("annual_revenue", "annual_revenue", "money_eu"), ("founded_on", "founded_on", "iso_date"),
        ("linkedin_url", "linkedin_url", "linkedin"), ("phone", "phone", "phone_plain"),
        ("owner", "owner", "owner_name"), ("description", "description", "text"),
    ]),
    ("COMPANIES_UPPER.csv", "companies", [
        ("ORGANIZATION", "name", "company_plain"), ("WEB SITE", "domain", "www_domain"),
        ("SECTOR", "industry", "industry_label"), ("HEADCOUNT", "employee_count", "employees"),
        ("REVENUE", "annual_revenue", "money_plain"), ("FOUNDED", "founded_on", "eu_date"),
        ("TEL", "phone", "phone"), ("ACCOUNT MANAGER", "owner", "owner_name"),
        ("ABOUT", "description", "text"), ("VAT_NUMBER", None, "id"),
    ]),
    ("deals_export.csv", "deals", [
        ("Deal Name", "name", "deal"), ("Deal Stage", "stage", "deal_stage"),
        ("Amount", "amount", "money_us"), ("Close Date", "close_date", "us_date"),
        ("Probability", "probability", "percent"), ("Deal Owner", "owner", "owner_email"),
        ("Notes", "notes", "text"), ("Pipeline", None, "pipeline"),
        ("Company", "company_id", "company"),
    ]),
    ("deals_semicolon.csv", "deals", [
        ("Opportunity", "name", "deal"), ("Stage", "stage", "deal_stage"),
        ("Value", "amount", "money_eu"), ("Expected Close Date", "close_date", "dot_date"),
        ("Win Probability", "probability", "prob"), ("Owner", "owner", "owner_name"),
        ("Comments", "notes", "text"),
    ]),
    ("mailchimp_members.csv", "contacts", [
        ("Email Address", "email", "email"), ("First Name", "name.part", "first"),
        ("Last Name", "name.part", "last"), ("Phone", "phone", "phone"),
        ("TAGS", "tags", "tags_comma"), ("Subscribed", "newsletter_opt_in", "truefalse"),
        ("OPTIN_TIME", None, "space_time"), ("CONFIRM_IP", None, "ip"),
    ]),
    ("pipedrive_persons.csv", "contacts", [
        ("Person - Name", "name", "full"), ("Person - Email", "email", "email"),
        ("Person - Phone", "phone", "phone"), ("Person - Owner", "owner", "owner_name"),
        ("Person - Organization", None, "company"),
        ("Person - Add time", "signed_up_at", "space_time"),
        ("Person - Job title", "job_title", "title"),
    ]),
    ("zoho_accounts.csv", "companies", [
        ("Account Name", "name", "company_plain"), ("Website", "domain", "url"),
        ("Industry", "industry", "industry_label"), ("Employees", "employee_count", "employees"),
        ("Annual Revenue", "annual_revenue", "money_plain"), ("Phone", "phone", "phone"),
        ("Account Owner", "owner", "owner_email"), ("Description", "description", "text"),
        ("Created Time", None, "us_time"), ("Billing Code", None, "zip"),
    ]),
    ("google_contacts.csv", "contacts", [
        ("Name", "name", "full"), ("Given Name", None, "first"), ("Family Name", None, "last"),
        ("E-mail 1 - Type", None, "type_label"), ("E-mail 1 - Value", "email", "email"),
        ("Phone 1 - Type", None, "type_label"), ("Phone 1 - Value", "phone", "phone"),
        ("Organization 1 - Name", None, "company"),
        ("Organization 1 - Title", "job_title", "title"), ("Notes", None, "text"),
    ]),
    ("outlook_contacts.csv", "contacts", [
        ("Title", None, "salutation"), ("First Name", "name.part", "first"),
        ("Middle Name", None, "middle"), ("Last Name", "name.part", "last"),
        ("Company", "company_id", "company"), ("Job Title", "job_title", "title"),
        ("Business Phone", "phone", "phone"), ("Mobile Phone", None, "phone_plain"),
        ("E-mail Address", "email", "email"), ("Web Page", "website", "site"),
        ("Birthday", None, "birthday"), ("Notes", None, "text"),
    ]),
    ("typed_contacts.parquet", "contacts", [
        ("FirstName", "name.part", "first"), ("LastName", "name.part", "last"),
        ("EmailAddress", "email", "email"), ("MobilePhone", "phone", "phone"),
        ("LeadScore", "lead_score", "score"), ("OptIn", "newsletter_opt_in", "truefalse"),
        ("LastContacted", "last_contacted", "iso_date"),
        ("SignupTime", "signed_up_at", "space_time"),
        ("CompanyName", "company_id", "company"),
    ]),
]


def _typed(kind: str, cells: list[str]) -> object:
    import pyarrow as pa

    if kind == "score":
        return pa.array([int(c) for c in cells])
    if kind == "truefalse":
        return pa.array([c == "true" for c in cells])
    if kind == "iso_date":
        return pa.array([date.fromisoformat(c) for c in cells])
    if kind == "space_time":
        return pa.array([datetime.fromisoformat(c) for c in cells])
    return pa.array(cells)


def main() -> None:
    spec = []
    for name, otype, cols in FILES:
        rows = [[GEN[kind](i) for _h, _e, kind in cols] for i in range(ROWS)]
        header = [h for h, _e, _k in cols]
        if name.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            arrays = [_typed(k, [r[j] for r in rows]) for j, (_h, _e, k) in enumerate(cols)]
            pq.write_table(pa.table(dict(zip(header, arrays, strict=True))), HERE / name)
        else:
            delimiter = ";" if "semicolon" in name else ","
            with open(HERE / name, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f, delimiter=delimiter)
                w.writerow(header)
                w.writerows(rows)
        spec.append({"file": name, "type": otype,
                     "columns": [{"header": h, "expect": e, "kind": k} for h, e, k in cols]})
    text = "# Written by make_corpus.py: the expected mapping of every column.\n"
    (HERE / "corpus.yaml").write_text(text + yaml.safe_dump(spec, sort_keys=False))


if __name__ == "__main__":
    main()

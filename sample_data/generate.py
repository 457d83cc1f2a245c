"""Generate the sample sources (deterministic: fixed seed). Run: python sample_data/generate.py

Writes companies.csv (~200 rows), contacts.csv (~500 rows) and deals.parquet (~300 rows) next
to this script. They are realistic and somewhat messy on purpose; the comments below say which
rows are bad and why, so that a dry run's report can be checked against them.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SEED = 20261122

OWNERS = ["ada@acme.example", "ben@acme.example", "chloe@acme.example", "diego@acme.example"]
FIRST = [
    "Ann",
    "Bob",
    "Carla",
    "Dmitri",
    "Elif",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kwame",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Uma",
    "Victor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoë",
    "Chloé",
    "François",
    "Søren",
    "Łukasz",
]
LAST = [
    "Anders",
    "Brown",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "García",
    "Hughes",
    "Ito",
    "Jensen",
    "Kowalski",
    "López",
    "Müller",
    "Nakamura",
    "O'Brien",
    "Petrov",
    "Quist",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Unger",
    "Varga",
    "Weber",
    "Xu",
    "Young",
    "Zimmermann",
]
WORDS = [
    "Acme",
    "Blue",
    "Cedar",
    "Delta",
    "Ember",
    "Falcon",
    "Granite",
    "Harbor",
    "Iris",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Maple",
    "Nimbus",
    "Orbit",
    "Pioneer",
    "Quartz",
    "Redwood",
    "Summit",
    "Tidal",
    "Umber",
    "Vertex",
    "Willow",
    "Zephyr",
    "Aurora",
    "Beacon",
]
NOUNS = [
    "Labs",
    "Systems",
    "Works",
    "Analytics",
    "Foods",
    "Logistics",
    "Health",
    "Capital",
    "Robotics",
    "Media",
]
SUFFIXES = [
    "Inc.",
    "Inc",
    "LLC",
    "Ltd",
    "GmbH",
    "Corp.",
    "Corporation",
    "Co",
    "SA",
    "AG",
    "BV",
    "PLC",
    "",
]
INDUSTRY_SPELLINGS = {
    "software": ["Software", "software", "SaaS", "Software "],
    "manufacturing": ["Manufacturing", "Mfg", "manufacturing"],
    "retail": ["Retail", "retail", "E-commerce"],
    "finance": ["Finance", "Financial Services", "finance"],
    "healthcare": ["Healthcare", "Health care", "HEALTHCARE"],
    "other": ["Other", ""],
}
TITLES = [
    "CTO",
    "VP, Sales",
    "Head of Data",
    "Data Engineer",
    "Analyst",
    "CEO",
    "Procurement Manager",
    "Marketing Lead",
    "Office Manager",
    "",
]
STAGES = ["Lead", "lead", "Qualified", "Customer", "customer", "Churned", ""]
TAGS = ["VIP", "Partner", "Churn risk", "Newsletter", "vip", "partner"]
DEAL_STAGES = ["Prospecting", "Proposal", "Negotiation", "Won", "Lost", "won", "proposal"]


def _owner(rng: random.Random) -> str:
    email = rng.choice(OWNERS)
    style = rng.random()
    if style < 0.2:
        return email.upper()
    if style < 0.35:
        return f"  {email.capitalize()} "
    return email


def _domain(rng: random.Random, slug: str) -> str:
    roll = rng.random()
    if roll < 0.08:
        return ""
    if roll < 0.3:
        return f"https://www.{slug}.com"
    if roll < 0.45:
        return f"http://{slug}.io/about"
    if roll < 0.6:
        return f"www.{slug}.com"
    return f"{slug}.com"


def companies(rng: random.Random) -> list[dict[str, str]]:
    rows, seen = [], set()
    while len(rows) < 200:
        base = f"{rng.choice(WORDS)} {rng.choice(NOUNS)}"
        if base in seen:
            continue
        seen.add(base)
        suffix = rng.choice(SUFFIXES)
        slug = base.lower().replace(" ", "")
        industry = rng.choice(list(INDUSTRY_SPELLINGS))
        employees = rng.choice([5, 12, 48, 150, 420, 1200, 8500, 23000])
        rows.append(
            {
                "Company Name": f"{base} {suffix}".strip(),
                "Website": _domain(rng, slug),
                "Industry": rng.choice(INDUSTRY_SPELLINGS[industry]),
                "Employees": f"{employees:,}",
                "Annual Revenue": "" if rng.random() < 0.1 else f"{rng.uniform(1e5, 5e7):.2f}",
                "Founded": dt.date(
                    rng.randint(1950, 2022), rng.randint(1, 12), rng.randint(1, 28)
                ).isoformat(),
                "LinkedIn": ""
                if rng.random() < 0.3
                else f"https://www.linkedin.com/company/{slug}",
                "Phone": f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}",
                "Account Owner": _owner(rng),
                "About": rng.choice(
                    [
                        "",
                        f"{base} makes things.\nFounded by two friends.",
                        f"{base}, trusted since forever.",
                    ]
                ),
            }
        )
    # bad rows, on purpose
    rows[17]["Employees"] = "about 50"  # not a number
    rows[42]["Industry"] = "Aerospace"  # not an option (no close match)
    rows[88]["Account Owner"] = "olga@acme.example"  # unknown owner → unowned (policy)
    return rows


def contacts(rng: random.Random, domains: list[str]) -> list[dict[str, str]]:
    rows = []
    used = set()
    for _ in range(500):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        local = f"{first}.{last}".lower().replace("'", "")
        n = 1
        while f"{local}{n}" in used:
            n += 1
        used.add(f"{local}{n}")
        dom = rng.choice(domains)
        email = f"{local}{n}@{dom}"
        if rng.random() < 0.2:
            email = email.upper() if rng.random() < 0.5 else f" {email} "
        tags = rng.sample(TAGS[:4], rng.randint(0, 2))
        signed = dt.datetime(2024, 1, 1) + dt.timedelta(minutes=rng.randint(0, 60 * 24 * 600))
        last_contacted = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
        rows.append(
            {
                "First Name": first,
                "Last Name": last,
                "Email": email,
                "Phone": f"+44 20 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
                "Title": rng.choice(TITLES),
                "Stage": rng.choice(STAGES),
                "Score": "" if rng.random() < 0.1 else str(rng.randint(0, 100)),
                "Newsletter": rng.choice(["yes", "no", "Y", "N", "1", "0", "true", "FALSE", ""]),
                "Last Contacted": last_contacted.strftime("%d/%m/%Y"),
                "Tags": "; ".join(tags),
                "Company Domain": dom,
                "Owner": _owner(rng),
                "Signed Up": signed.strftime("%Y-%m-%d %H:%M"),
            }
        )
    # bad rows, on purpose (data line = index + 2)
    rows[10]["Email"] = "john.doe@"  # invalid email
    rows[11]["Email"] = "jane at example.com"  # invalid email
    rows[30]["Score"] = "150"  # out of range (max 100)
    rows[31]["Score"] = "87.5"  # too many decimal places (0)
    rows[55]["Stage"] = "Custmer"  # not an option; suggestion: customer
    rows[70]["Owner"] = "zoe@acme.example"  # unknown owner → row fails
    rows[120]["Email"] = rows[20]["Email"].strip().lower()  # duplicate: row 122 wins over 22
    rows[121]["Newsletter"] = "maybe"  # not a boolean
    rows[200]["Last Contacted"] = "31/02/2025"  # no such date
    return rows


def write_contacts(path: Path, rows: list[dict[str, str]]) -> None:
    cols = list(rows[0])
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for i, row in enumerate(rows):
            w.writerow(row)
            if i == 300:  # a malformed line: one cell too many (an unquoted comma)
                f.write(
                    "Mia,Lund,mia.lund@beacon.com,+44 20 1111 2222,VP, Ops,lead,50,yes,"
                    "01/02/2025,,beacon.com,ada@acme.example,2024-05-01 09:00\r\n"
                )


def deals(rng: random.Random, companies_rows: list[dict[str, str]]) -> pa.Table:
    names, stages, amounts, closes, probs, cnames, cdomains, owners, notes = ([] for _ in range(9))
    for i in range(300):
        c = rng.choice(companies_rows)
        names.append(
            f"{c['Company Name']} — {rng.choice(['Renewal', 'Expansion', 'Pilot'])} #{1000 + i}"
        )
        stages.append(rng.choice(DEAL_STAGES))
        amounts.append(None if rng.random() < 0.05 else round(rng.uniform(500, 250000), 2))
        closes.append(dt.date(2025, 1, 1) + dt.timedelta(days=rng.randint(0, 500)))
        probs.append(rng.choice([10, 25, 50, 75, 90, 100]))
        cnames.append(c["Company Name"])
        cdomains.append(c["Website"])
        owners.append(_owner(rng))
        notes.append(
            rng.choice(["", "Call back in Q3", "Needs legal review", "Champion: head of data"])
        )
    stages[13] = "Closed Won"  # not an option; suggestion: won
    stages[14] = ""  # required field empty
    amounts[40] = -100.0  # below number_min 0
    probs[77] = 120  # above number_max 100
    return pa.table(
        {
            "Deal Name": names,
            "Stage": stages,
            "Amount": pa.array(amounts, pa.float64()),
            "Close Date": pa.array(closes, pa.date32()),
            "Probability": pa.array(probs, pa.int64()),
            "Company Name": cnames,
            "Company Domain": cdomains,
            "Owner Email": owners,
            "Notes": notes,
        }
    )


def main() -> None:
    rng = random.Random(SEED)
    comp = companies(rng)
    with (HERE / "companies.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(comp[0]))
        w.writeheader()
        w.writerows(comp)
    slugs = [c["Company Name"].split(" ")[0].lower() + ".com" for c in comp]
    write_contacts(HERE / "contacts.csv", contacts(rng, slugs))
    pq.write_table(deals(rng, comp), HERE / "deals.parquet")


if __name__ == "__main__":
    main()

"""Helpers for the acceptance tests: the CLI as a subprocess, an in-process sandbox on a
loopback port, a messy never-seen CSV of trade-show leads, and report readers."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from recordsync.sandbox import create_app
from recordsync.sandbox.server import run_in_thread

REPO = Path(__file__).resolve().parents[2]
KEY = "sk_test_acceptance_0123456789"


@dataclass
class Done:
    code: int
    out: str
    err: str


def recordsync(*args: str | Path, cwd: Path, key: str | None = KEY, timeout: float = 600) -> Done:
    """Run ``python -m recordsync ARGS`` like a user would (no terminal, clean env).

    ``timeout`` only stops a hung command: a loaded machine may take long to start Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECORDSYNC_")}
    env["RECORDSYNC_STATE_DB"] = str(cwd / "state.db")
    if key is not None:
        env["RECORDSYNC_API_KEY"] = key
    proc = subprocess.run(
        [sys.executable, "-m", "recordsync", *map(str, args)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Done(proc.returncode, proc.stdout, proc.stderr)


@contextmanager
def sandbox(db: Path, faults: list[str] | None = None) -> Iterator[str]:
    """A sandbox on a free loopback port, with the acceptance key; yields its base URL."""
    app = create_app(db, api_key=KEY, faults=faults)
    try:
        with run_in_thread(app) as base_url:
            yield base_url
    finally:
        app.state.store.close()


def all_records(base_url: str, object_type: str) -> list[dict[str, Any]]:
    """Every record of a type, deleted ones included, read back through the list endpoint."""
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=base_url, headers={"x-api-key": KEY}) as c:
        offset = 0
        while True:
            r = c.get(
                f"/api/objects/{object_type}",
                params={"limit": 100, "offset": offset, "include_deleted": "true"},
            )
            r.raise_for_status()
            body = r.json()
            out += body["data"]
            offset += 100
            if not body["pagination"]["has_more"]:
                return out


def report_of(done: Done, cwd: Path) -> Path:
    """The report directory a run names on stderr (``report: DIR``)."""
    (line,) = [ln for ln in done.err.splitlines() if ln.startswith("report: ")]
    return cwd / line.removeprefix("report: ")


def report_dirs(reports: Path) -> list[Path]:
    return sorted(p for p in reports.iterdir() if p.is_dir())


def summary(report_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report_dir / "summary.json").read_text("utf-8"))
    return data


def results(report_dir: Path) -> list[dict[str, str]]:
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def copy_sample(dest: Path) -> Path:
    """The repository's sample pipeline (pipelines, configs, sample_data) copied to dest."""
    for part in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / part, dest / part)
    return dest / "pipelines" / "nightly.yaml"


# -- a CSV the project has never seen: trade-show leads -------------------------------
HEADER = [
    "First Name", "Last Name", "E-mail Address", "Job Title", "Stage", "Lead Score",
    "Interests", "Owner Email", "Met On", "Newsletter",
]  # fmt: skip
FIRST = ["Zoë", "François", "Jürgen", "Renée", "Søren", "Inês", "Björn", "Chloé", "José", "Ana"]
LAST = ["Müller", "Dubois", "Ångström", "García", "Nuñez", "Lefèvre", "Öztürk", "Dvorák",
        "Señor", "Weiß"]  # fmt: skip
STAGES = ["Lead", "qualified", "Customer", "LEAD", "Qualified"]
OWNERS = ["Ada@ACME.example", " ben@acme.example", "CHLOE@acme.example ", "diego@Acme.Example"]
INTERESTS = ["VIP|Partner", "Newsletter", "", "partner | churn risk", "VIP"]

# physical line -> (column the error must name, the bad value it must quote)
BAD_LINES = {
    5: ("E-mail Address", "jose.garcia@"),
    9: ("Stage", "Hot Lead"),
    13: ("Lead Score", "150"),
    17: ("Owner Email", "zoe@acme.example"),
    25: (None, "expected 10 cells, found 11"),
    33: ("Met On", "31/02/2024"),
    37: ("Interests", "Golf"),
}
DUPLICATE_LINE, DUPLICATE_WINNER = 21, 30

LEADS_MAPPING = """\
object_type: contacts
source:
  path: leads.csv
  delimiter: ";"
  encoding: cp1252
name:
  template: "{First Name} {Last Name}"
match_by: [email]
on_missing_key: fail
duplicates: last
owner:
  column: Owner Email
  on_unknown: fail
fields:
  email: E-mail Address
  job_title: Job Title
  lifecycle_stage: Stage
  lead_score: Lead Score
  tags:
    column: Interests
    split: "|"
  last_contacted:
    column: Met On
    date_format: "%d/%m/%Y"
  newsletter_opt_in: Newsletter
"""

LEADS_PIPELINE = """\
name: tradeshow
steps:
  - leads.yaml
report:
  directory: reports
send:
  chunk_size: 20
  canary_chunk_size: 5
"""


def _ascii(text: str) -> str:
    text = text.replace("ß", "ss").replace("ø", "o")
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def lead_rows() -> list[list[str]]:
    """60 leads; the rows at BAD_LINES are broken, DUPLICATE_LINE repeats another's e-mail."""
    rows = []
    for i in range(60):
        first, last = FIRST[i % 10], LAST[(i * 3) % 10]
        email = _ascii(f"{first.lower()}.{last.lower()}{i}@expo.example")
        if i % 7 == 0:
            email = email.upper()
        rows.append([
            first, last, email, "Head of Data" if i % 2 else "Ingénieur", STAGES[i % 5],
            str((i * 7) % 101), INTERESTS[i % 5], OWNERS[i % 4],
            f"{i % 28 + 1:02d}/{i % 12 + 1:02d}/2024", "yes" if i % 2 else "no",
        ])  # fmt: skip
    rows[3][2] = "jose.garcia@"  # line 5
    rows[7][4] = "Hot Lead"  # line 9
    rows[11][5] = "150"  # line 13
    rows[15][7] = "zoe@acme.example"  # line 17
    rows[28][2] = rows[19][2].title()  # line 30 has line 21's e-mail in another case
    rows[23].append("extra")  # line 25: ragged
    rows[31][8] = "31/02/2024"  # line 33
    rows[35][6] = "VIP|Golf"  # line 37
    return rows


def write_leads(dest: Path, rows: list[list[str]] | None = None) -> Path:
    """leads.csv (semicolons, cp1252, CRLF), leads.yaml and tradeshow.yaml in dest."""
    rows = lead_rows() if rows is None else rows
    text = ";".join(HEADER) + "\r\n" + "".join(";".join(r) + "\r\n" for r in rows)
    (dest / "leads.csv").write_bytes(text.encode("cp1252"))
    (dest / "leads.yaml").write_text(LEADS_MAPPING, encoding="utf-8")
    (dest / "tradeshow.yaml").write_text(LEADS_PIPELINE, encoding="utf-8")
    return dest / "tradeshow.yaml"

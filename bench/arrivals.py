"""What arrived at the server, checked against the source (for the benchmarks).

A benchmark that trusts the tool's own summary measures nothing if the tool miscounts: these
look at the server side. ``check_noop`` reads bench/noop_server.py's counts; ``check_sandbox``
reads the sandbox's records from its database file (after the server stopped, or while it
runs: SQLite readers see committed rows).
"""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import httpx


def source_emails(pipeline: Path) -> set[str]:
    """The e-mails of bench_run.py's generated contacts (one per row, all distinct)."""
    with open(pipeline.parent.parent / "data" / "contacts.csv", newline="", encoding="utf-8") as f:
        return {row["Email"] for row in csv.DictReader(f)}


class ArrivalError(AssertionError):
    """What arrived at the server is not every source row exactly once."""


def check_noop(url: str, emails: set[str], who: str) -> None:
    got = httpx.get(url + "/_counts", params={"identities": "1"}, timeout=120).json()
    ids = got["identities"].get("contacts", {})
    arrived = {identity.split(":", 1)[1] for identity in ids}
    twice = sum(1 for n in ids.values() if n != 1)
    extra = {k: v for k, v in got["entries"].items() if k != "contacts"}
    if arrived != emails or twice or got["entries"].get("contacts") != len(emails) or extra:
        raise ArrivalError(
            f"{who}: the no-op server received {got['entries']} entries, {len(arrived)} distinct"
            f" ({twice} more than once, {len(emails - arrived)} source rows missing,"
            f" {len(arrived - emails)} not in the source) for {len(emails)} source rows"
        )


def check_sandbox(db: Path, emails: set[str], who: str) -> None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT email_norm, COUNT(*) FROM records WHERE deleted_at IS NULL"
            " AND email_norm LIKE '%@bench.example' GROUP BY email_norm"
        ).fetchall()
    conn.close()
    arrived = {email for email, _ in rows}
    twice = sum(1 for _, n in rows if n != 1)
    if arrived != emails or twice:
        raise ArrivalError(
            f"{who}: the sandbox holds {len(arrived)} bench records ({twice} e-mails more than"
            f" once, {len(emails - arrived)} source rows missing) for {len(emails)} source rows"
        )


def sandbox_changes(db: Path) -> tuple[int, str | None]:
    """(live bench records, the latest ``updated_at``): unchanged when nothing arrived."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        count, latest = conn.execute(
            "SELECT COUNT(*), MAX(updated_at) FROM records WHERE deleted_at IS NULL"
            " AND email_norm LIKE '%@bench.example'"
        ).fetchone()
    conn.close()
    return int(count), latest


def records_holding(db: Path, text: str) -> int:
    """Live bench records whose stored fields contain ``text``."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM records WHERE deleted_at IS NULL"
            " AND email_norm LIKE '%@bench.example' AND instr(data, ?) > 0",
            (text,),
        ).fetchone()
    conn.close()
    return int(count)

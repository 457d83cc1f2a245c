"""Lost answers settled by reading back while the sandbox's clocks disagree (its ``Date``
header, the clock stamping ``created_at`` / ``updated_at``, the client's): no row is created
twice, every row is its own record or ``in_doubt`` with exit 1."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy

from .support import all_records, served, target

ROWS = 40
SKEWS = [
    "skew:date=-30s",
    "skew:date=+1s",
    "skew:date=+2s",
    "skew:date=+30s",
    "skew:stamps=-30s",  # records stamped 30 s behind the Date header and the client
    "skew:stamps=+30s",
]
LOST = ["drop-after-apply:every=2:path=/batch", "status-after-apply:502:every=3:path=/batch"]


def write_project(tmp_path: Path) -> list[dict[str, str]]:
    """Deals with no key (the service never deduplicates them); every 5th name repeats with
    its own amount, so a record is told from its twin by content."""
    rows = [
        {"Name": f"Deal {i - 1 if i % 5 == 1 else i}", "Amount": str(100 + i)}
        for i in range(ROWS)
    ]
    with open(tmp_path / "rows.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["Name", "Amount"])
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "m.yaml").write_text(
        "object_type: deals\nsource:\n  path: rows.csv\nname:\n  column: Name\n"
        "fields:\n  stage: {value: won}\n  amount: Amount\n"
    )
    (tmp_path / "p.yaml").write_text(
        "name: skew\nsteps:\n  - m.yaml\nsend:\n  chunk_size: 5\n  canary_chunk_size: 5\n"
    )
    return rows


def run(tmp_path: Path, faults: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    request = RunRequest(
        tmp_path / "p.yaml",
        report_dir=tmp_path / "reports",
        state_db=tmp_path / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=3),
    )
    with served(tmp_path / "s.db", faults) as url:
        result = run_pipeline(request, target=target(url))
        held = all_records(url, "deals")
    return result, held


@pytest.mark.parametrize("lost", LOST, ids=["drop-after-apply", "502-after-apply"])
@pytest.mark.parametrize("skew", SKEWS)
def test_lost_answers_settle_whatever_the_clock_skew(tmp_path: Path, skew: str, lost: str) -> None:
    rows = write_project(tmp_path)
    result, held = run(tmp_path, [skew, lost])
    assert result.error is None, result.error
    # no row's values in two records: nothing was created twice
    copies = Counter((r["name"], int(r["amount"])) for r in held)
    assert max(copies.values()) == 1, [k for k, n in copies.items() if n > 1]
    with open(result.report_dir / "results.csv", newline="") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == ROWS
    by_id = {r["id"]: r for r in held}
    ok = [line for line in lines if line["status"] in ("created", "updated")]
    for line in ok:
        row = rows[int(line["source_row"]) - 2]
        record = by_id[int(line["record_id"])]
        assert (record["name"], int(record["amount"])) == (row["Name"], int(row["Amount"]))
    assert len({line["record_id"] for line in ok}) == len(ok)
    doubt = [line for line in lines if line["status"] == "in_doubt"]
    assert len(ok) + len(doubt) == ROWS
    assert (result.exit_code == 0) == (not doubt) and result.exit_code in (0, 1)
    assert result.summary["steps"][0]["settled_by_reading"] > 0
    # rows of their own content settle: none is held in doubt, every record is a row's
    assert not doubt, doubt[0]["error"]
    assert len(held) == ROWS

"""A row too large for one request fails alone as ``invalid`` before anything is sent, naming
its large column and the sizes; the rest of its chunk is sent (validate/entry_size.py)."""

from __future__ import annotations

import csv
from pathlib import Path

from recordsync.run.pipeline import run_pipeline
from recordsync.validate.entry_size import MAX_REQUEST_BYTES

from .support import all_records, served, target
from .test_ledger_e2e import request, results, write, write_csv


def deals(tmp: Path, notes: list[str], send: str = "") -> Path:
    rows = [[f"Deal {i}", "won", n] for i, n in enumerate(notes)]
    write_csv(tmp / "deals.csv", ["Name", "Stage", "Notes"], rows)
    write(
        tmp / "deals.yaml",
        "object_type: deals\nsource: {path: deals.csv}\nname: Name\nmatch_by: [name]\n"
        "fields: {stage: Stage, notes: Notes}\n",
    )
    return write(tmp / "p.yaml", f"steps: [deals.yaml]\n{send}")


def test_a_row_over_the_services_body_limit_fails_alone(tmp_path: Path) -> None:
    big = "x" * (MAX_REQUEST_BYTES + 1000)  # the sandbox would answer 413 for its chunk
    pipeline = deals(tmp_path, ["small", big, "small too"])
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        names = sorted(r["name"] for r in all_records(url, "deals"))
    t = result.summary["totals"]
    assert (t["created"], t["rows_invalid"], t["failed"]) == (2, 1, 0)
    assert result.error is None and result.exit_code == 1
    assert names == ["Deal 0", "Deal 2"]
    [bad] = [r for r in results(result) if r["status"] == "invalid"]
    assert bad["source_row"] == "3"
    assert "row too large to send" in bad["error"] and "'Notes' (5,243,880 bytes)" in bad["error"]
    assert "send.max_request_bytes" in bad["error"]


def test_the_limit_is_a_setting_and_counts_json_escapes(tmp_path: Path) -> None:
    # 3,000 control characters are 18,000 bytes as JSON (\u0001): over a 16 KiB request
    pipeline = deals(tmp_path, ["\x01" * 3000, "y" * 3000], "send: {max_request_bytes: 16384}\n")
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
    statuses = [r["status"] for r in results(result)]
    assert statuses == ["invalid", "valid"]
    with open(result.report_dir / "failures.csv", newline="", encoding="utf-8") as f:
        [row] = list(csv.DictReader(f))
    assert "its batch entry is 18,0" in row["_error"] and "of 16,384 bytes" in row["_error"]

"""``recordsync retry`` resends failed rows with every cell exactly as in the source."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.retry import retry_report
from recordsync.send.retry import RetryPolicy

from .support import all_records, served, target


def _fail_then_retry(tmp_path: Path, source: str) -> tuple[Any, Any, dict[str, Any]]:
    """A deals pipeline reading ``source`` whose every batch fails (503), then ``retry`` into
    the healthy sandbox: the first run, the retry, and each record's notes by name."""
    (tmp_path / "deals.yaml").write_text(
        f"object_type: deals\nsource: {{path: {source}}}\nname: Name\nmatch_by: [name]\n"
        "fields: {stage: Stage, notes: {column: Notes, trim: false}}\n"
    )
    (tmp_path / "p.yaml").write_text("steps: [deals.yaml]\n")
    request = RunRequest(
        tmp_path / "p.yaml",
        report_dir=tmp_path / "reports",
        state=False,
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=1),
    )
    with served(tmp_path / "s.db", ["status:503:path=/batch"]) as url:
        first = run_pipeline(request, target=target(url))
    with served(tmp_path / "s.db") as url:
        again = retry_report(first.report_dir, request, target=target(url))
        held = {r["name"]: r["notes"] for r in all_records(url, "deals")}
    return first, again, held


def test_retry_sends_tricky_cells_to_the_service_unchanged(tmp_path: Path) -> None:
    """End to end: every batch fails (503), then ``retry`` resends from failures.csv; the
    sandbox holds each note exactly as in the source (CR, CRLF, quotes, formulas, unicode)."""
    notes = [
        "one\rtwo\rthree",
        "a\r\nb\nc",
        '"quoted", yes',
        "=SUM(A1)",
        "+49 30 1",
        "'=x",
        "ünï\u2028 🎉",
        "\r",
    ]
    with open(tmp_path / "deals.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Stage", "Notes"])
        w.writerows([f"Deal {i}", "won", n] for i, n in enumerate(notes))
    first, again, held = _fail_then_retry(tmp_path, "deals.csv")
    assert first.summary["totals"]["failed"] == len(notes)
    assert again.summary["totals"]["created"] == len(notes)
    assert held == {f"Deal {i}": n for i, n in enumerate(notes)}


def test_retry_keeps_a_cell_whose_lines_look_like_rows(tmp_path: Path) -> None:
    """A Parquet export's note whose second line looks like a row of the failures file: the
    failures file is recordsync's own, so retry reads the note as written (a stray quote is
    only what a source may hold)."""
    notes = ["call back\n,won,later", "x\n,0", "plain"]
    names = [f"Deal {i}" for i in range(len(notes))]
    pq.write_table(
        pa.table({"Name": names, "Stage": ["won"] * len(notes), "Notes": notes}),
        tmp_path / "deals.parquet",
    )
    first, again, held = _fail_then_retry(tmp_path, "deals.parquet")
    assert first.summary["totals"]["failed"] == len(notes)
    assert again.summary["totals"]["created"] == len(notes)
    assert again.summary["accounting_ok"]
    assert held == dict(zip(names, notes, strict=True))

"""The malformed corpus (tests/data/malformed/) through whole runs into the real sandbox over
HTTP: results.csv has a line for every physical data row, and ``validate --scan`` counts the
same rows as the run."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

from e2e.support import all_records, served, target  # tests/ is on sys.path
from recordsync.config import load_pipeline
from recordsync.run.checks import check_pipeline
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy

MALFORMED = Path(__file__).resolve().parents[1] / "data" / "malformed"


def project(tmp: Path, name: str, mirror: bool) -> Path:
    shutil.copy(MALFORMED / name, tmp / "m.csv")
    (tmp / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\n"
        "match_by: [email]\nfields: {email: Email}\n"
        + ("mirror_deletes: {enabled: true, max_share: 0.5}\n" if mirror else "")
    )
    (tmp / "p.yaml").write_text("steps: [m.yaml]\n")
    return tmp / "p.yaml"


def run(tmp: Path, pipeline: Path, url: str) -> tuple[Any, list[dict[str, str]]]:
    result = run_pipeline(
        RunRequest(
            pipeline,
            report_dir=tmp / "reports",
            state_db=tmp / "state.db",
            retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
            list_unchanged=True,  # every physical data row's line, the unchanged ones too
        ),
        target=target(url),
    )
    with open(result.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return result, list(csv.DictReader(f))


@pytest.mark.parametrize(
    ("name", "rows", "broken"),
    [("two_stray_quotes.csv", 12, 5), ("unclosed_quote_near_end.csv", 300, 222)],
)
def test_a_stray_quote_loses_no_row_and_validate_agrees(
    tmp_path: Path, name: str, rows: int, broken: int
) -> None:
    pipeline = project(tmp_path, name, mirror=False)
    with served(tmp_path / "s.db") as url:
        result, out = run(tmp_path, pipeline, url)
        live = {r["email"] for r in all_records(url, "contacts")}
    assert len(out) == rows  # one line per physical data row
    assert sorted(int(r["source_row"]) for r in out) == list(range(2, rows + 2))
    invalid = [r for r in out if r["status"] == "invalid"]
    assert [r["source_row"] for r in invalid] == [str(broken)]
    assert f"line {broken}: unbalanced quote: the quote at character" in invalid[0]["error"]
    assert len(live) == rows - 1 and result.exit_code == 1
    assert result.summary["accounting_ok"]
    [scan] = check_pipeline(load_pipeline(pipeline), scan=True)
    assert scan.ok and dict(scan.counts) == {"valid": rows - 1, "invalid": 1}
    assert "unbalanced quote" in " ".join(scan.first_problems)


def test_an_unclosed_quote_near_the_end_with_mirror_deletes(tmp_path: Path) -> None:
    """The first run reads the file without the stray quote; the second, with it, reads
    every row again, reports the broken one and deletes the one row that is gone."""
    pipeline = project(tmp_path, "unclosed_quote_near_end.csv", mirror=True)
    text = (tmp_path / "m.csv").read_text()
    (tmp_path / "m.csv").write_text(text.replace('"C220', "C220"))
    with served(tmp_path / "s.db") as url:
        first, _ = run(tmp_path, pipeline, url)
        assert first.exit_code == 0
        lines = text.splitlines()
        del lines[100]  # row P99 is gone from the export
        (tmp_path / "m.csv").write_text("\n".join(lines) + "\n")
        second, out = run(tmp_path, pipeline, url)
        live = {r["email"] for r in all_records(url, "contacts")}
    assert len(out) == 299
    assert [r["source_row"] for r in out if r["status"] == "invalid"] == ["221"]
    assert "p299@m.example" in live and "p220@m.example" in live
    step = second.summary["steps"][0]
    assert (step["deleted"], step["mirror_deletes_skipped"]) == (1, None)
    assert "p99@m.example" not in live and second.exit_code == 1

"""What a quiet run prints on exit 1, and how the embedded sandbox is announced and named."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from recordsync.run.target import choose_target, open_target

REPO = Path(__file__).resolve().parents[2]


def test_quiet_exit_1_says_why_and_where(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    assert cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet") == 1
    out, err = capsys.readouterr()
    assert out == ""
    (report,) = [p for p in (project / "reports").iterdir() if p.is_dir()]
    totals = json.loads((report / "summary.json").read_text())["totals"]
    assert totals["rows_invalid"] > 0
    dup = f", {totals['rows_duplicate']} duplicate" if totals["rows_duplicate"] else ""
    where = f"see {report.relative_to(project)}/report.md"
    bad, read = totals["rows_not_ok"], totals["rows_read"]
    kinds = f"{totals['rows_invalid']} invalid{dup}"
    line = f"dry run: {bad:,} of {read:,} rows not ok ({kinds}): {where}"
    assert err.splitlines()[-1] == line  # the verdict, last


def test_embedded_sandbox_announcement_reads_cleanly(
    project: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet")  # its `target: sandbox`
    err = capsys.readouterr().err
    pattern = (
        r"^using the embedded sandbox \(\.recordsync/sandbox\.db\) on http://127\.0\.0\.1:\d+ "
        r"\(from pipeline target sandbox\); set RECORDSYNC_BASE_URL or --profile for a real "
        r"service$"
    )
    assert any(re.match(pattern, line) for line in err.splitlines()), err
    pipeline = project / "pipelines" / "nightly.yaml"
    text = pipeline.read_text()
    assert re.search(r"^target: sandbox\b.*$", text, flags=re.M)
    pipeline.write_text(re.sub(r"^target: sandbox\b.*$", "", text, flags=re.M))
    cli("run", "pipelines/nightly.yaml", "--dry-run", "--quiet")
    err = capsys.readouterr().err
    pattern = (
        r"^no target configured: using the embedded sandbox \(\.recordsync/sandbox\.db\) on "
        r"http://127\.0\.0\.1:\d+; set RECORDSYNC_BASE_URL or --profile for a real service$"
    )
    assert any(re.match(pattern, line) for line in err.splitlines()), err


def test_embedded_target_has_a_stable_name(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.db"
    names = []
    for _ in range(2):
        with open_target(
            choose_target(env={}, profiles_path=tmp_path / "none.yaml"), env={}, sandbox_db=db
        ) as t:
            names.append(t.name)
            assert t.chosen_by == "no target configured"
            assert t.origin == f"embedded sandbox {db} (no target configured)"
    assert names == [f"embedded-sandbox:{db}"] * 2
    choice = choose_target(env={}, profiles_path=tmp_path / "none.yaml", profile="sandbox")
    assert choice.base_url is None and choice.origin == "--profile sandbox"

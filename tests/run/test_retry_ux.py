"""``recordsync retry`` with nothing to resend exits 0 (``run && retry`` in cron) and says
what to do with the invalid rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from recordsync.cli import main
from recordsync.run.retry import nothing_to_retry

COLUMNS = ["email", "_error", "_step", "_source_row", "_status", "_source_file"]


def _report(tmp_path: Path, statuses: list[str]) -> Path:
    d = tmp_path / "run1"
    d.mkdir()
    (d / "summary.json").write_text(json.dumps({"run_id": "run1", "pipeline_file": None}))
    with open(d / "failures.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, status in enumerate(statuses):
            w.writerow([f"a{i}@x.example", "bad", "contacts", i + 2, status, "c.csv"])
    return d


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    return int(info.value.code or 0)


def test_nothing_to_retry_exits_0_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _report(tmp_path, ["invalid"] * 16)
    assert _cli("retry", str(d), "-q") == 0
    err = capsys.readouterr().err
    assert "nothing to retry: 16 invalid rows need fixing in the source" in err
    assert "set `_status` to `failed` in" in err and "failures.csv to resend them" in err


def test_message_for_one_row_and_for_none(tmp_path: Path) -> None:
    one = nothing_to_retry(_report(tmp_path, ["invalid"]))
    assert one is not None and "1 invalid row needs fixing" in one
    (tmp_path / "run1" / "failures.csv").unlink()
    assert nothing_to_retry(tmp_path / "run1") is None  # retry_report reports the missing file
    (tmp_path / "run1").rename(tmp_path / "old")
    assert nothing_to_retry(_report(tmp_path, [])) == (
        "nothing to retry: the run has no failed, in-doubt or invalid rows"
    )


def test_rows_to_resend_are_not_nothing(tmp_path: Path) -> None:
    assert nothing_to_retry(_report(tmp_path, ["invalid", "failed"])) is None
    (tmp_path / "run1").rename(tmp_path / "old")
    assert nothing_to_retry(_report(tmp_path, ["in_doubt"])) is None


def test_a_resumed_runs_doubt_starts_at_its_first_attempt(tmp_path: Path) -> None:
    """A resumed run keeps the first attempt's id and has its own, later started_at: rows it
    holds in doubt may have been written by the first attempt, so a retry reads back from the
    earlier of the two."""
    from datetime import UTC, datetime

    from recordsync.run.retry import _earlier_run

    summary = {"run_id": "20261125T100000Z-nightly-ab12", "started_at": "2026-11-25T11:30:00Z"}
    since, _ = _earlier_run(tmp_path, summary)
    assert since == datetime(2026, 11, 25, 10, 0, tzinfo=UTC).timestamp()
    summary = {"run_id": "20261125T100000Z-nightly-ab12", "started_at": "2026-11-25T09:59:59Z"}
    assert (
        _earlier_run(tmp_path, summary)[0]
        == datetime(2026, 11, 25, 9, 59, 59, tzinfo=UTC).timestamp()
    )
    assert _earlier_run(tmp_path, {"run_id": "no-stamp", "started_at": "bad"})[0] is None

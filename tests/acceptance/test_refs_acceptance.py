"""Acceptance: the sample pipeline's deals refer to companies (`company_id: {ref: ...}`,
resolved from the companies step's ledger). A dry run and a run without the state store
must not promise or write something the real run would refuse."""

from __future__ import annotations

from pathlib import Path

from .support import all_records, copy_sample, recordsync, report_dirs, results, sandbox, summary


def test_no_state_run_keeps_or_refuses_references(tmp_path: Path) -> None:
    pipeline = copy_sample(tmp_path)
    with sandbox(tmp_path / "sb.db") as url:
        done = recordsync("run", pipeline, "--no-state", "--base-url", url, cwd=tmp_path)
        deals = all_records(url, "deals")
    if done.code == 2:  # refusing the option is an acceptable answer
        assert "ref" in done.err and "--no-state" in done.err, done.err
        assert deals == []
        return
    assert deals, done.err
    unlinked = [d["name"] for d in deals if d["company_id"] is None]
    assert unlinked == [], f"{len(unlinked)} of {len(deals)} deals have no company_id"


def test_dry_run_predicts_the_rows_the_real_run_rejects(tmp_path: Path) -> None:
    pipeline = copy_sample(tmp_path)
    dry_reports, real_reports = tmp_path / "dry", tmp_path / "real"
    with sandbox(tmp_path / "sb.db") as url:
        dry = recordsync(
            "run", pipeline, "--dry-run", "--base-url", url, "--report-dir", dry_reports,
            cwd=tmp_path,
        )  # fmt: skip
        real = recordsync(
            "run", pipeline, "--base-url", url, "--report-dir", real_reports, cwd=tmp_path
        )
    assert dry.code in (0, 1) and real.code in (0, 1), dry.err + real.err
    (dry_dir,) = report_dirs(dry_reports)
    (real_dir,) = report_dirs(real_reports)
    real_bad = {
        (r["step"], r["source_row"])
        for r in results(real_dir)
        if r["status"] in ("invalid", "duplicate", "failed")
    }
    dry_bad = {(r["step"], r["source_row"]) for r in results(dry_dir) if r["status"] != "valid"}
    assert dry_bad == real_bad
    dry_sent = [s["rows_sent"] for s in summary(dry_dir)["steps"]]
    real_sent = [s["rows_sent"] for s in summary(real_dir)["steps"]]
    assert dry_sent == real_sent

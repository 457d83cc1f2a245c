"""The pipeline against the sandbox in ``quirks="hosted"`` mode, over a real loopback socket:
a redirect for a bad key, 204 on DELETE, extra keys and record ids as strings."""

from __future__ import annotations

import csv
from pathlib import Path

from recordsync.core.errors import EXIT_ABORTED, AuthError, exit_code_for
from recordsync.run.pipeline import run_pipeline

from .support import all_records, served, target
from .test_ledger_e2e import keep_rows, mirror_pipeline, request, totals


def test_a_nightly_with_mirror_deletes_runs_against_hosted_quirks(tmp_path: Path) -> None:
    pipeline = mirror_pipeline(tmp_path, 10, max_share=0.5)
    db = tmp_path / "s.db"
    with served(db, quirks="hosted") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        keep_rows(tmp_path, [i for i in range(10) if i != 3])
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        third = run_pipeline(request(tmp_path, pipeline), target=target(url))
    with served(db) as plain:  # read back without quirks: integer ids, no extra keys
        live = all_records(plain, "contacts")
    assert (first.exit_code, totals(first)["created"]) == (0, 10), first.summary
    with open(first.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        ids = {int(row["record_id"]) for row in csv.DictReader(f)}
    assert len(ids) == 10 and {r["id"] for r in live} < ids  # one of them deleted since
    s = totals(second, "m")
    assert (s["deleted"], s["delete_failed"], s["rows_unchanged"], second.exit_code) == (1, 0, 9, 0)
    assert (totals(third, "m")["rows_unchanged"], third.exit_code) == (9, 0)
    assert sorted(r["email"] for r in live) == sorted(
        f"p{i}@m.example" for i in range(10) if i != 3
    )


def test_a_bad_key_redirect_is_an_authentication_failure(tmp_path: Path) -> None:
    pipeline = mirror_pipeline(tmp_path, 3)
    with served(tmp_path / "s.db", quirks="hosted") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url, "sk_live_wrong"))
    assert isinstance(result.error, AuthError)  # the report is written, every row not sent
    assert exit_code_for(result.error) == EXIT_ABORTED == result.exit_code
    assert "HTTP 307" in str(result.error) and "/login" not in str(result.error)
    assert result.summary["totals"]["not_sent"] == 3

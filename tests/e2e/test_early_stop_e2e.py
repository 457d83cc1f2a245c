"""A run that stops at the schema or users fetch (wrong key, 5xx after the retries, nothing
listening) still writes its report: the error in ``aborted``, every source row ``failed``
with ``not sent: ...``, the accounting exact, exit 3; nothing reaches the service."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from recordsync.core.errors import EXIT_ABORTED, ApiError, AuthError
from recordsync.run import pipeline as pipeline_module
from recordsync.run.pipeline import run_pipeline

from .support import all_records, served, target
from .test_ledger_e2e import request, results, write, write_csv


def two_steps(tmp: Path) -> Path:
    """Companies then contacts, one contact with an e-mail no service would take."""
    write_csv(tmp / "co.csv", ["Company", "Domain"], [["Acme", "acme.example"], ["Beta", "b.io"]])
    write_csv(
        tmp / "people.csv",
        ["Name", "Email"],
        [["Ann", "ann@x.example"], ["Ben", "not-an-email"], ["Cy", "cy@x.example"]],
    )
    write(
        tmp / "co.yaml",
        "object_type: companies\nsource: {path: co.csv}\nname: Company\nmatch_by: [name]\n"
        "fields: {domain: Domain}\n",
    )
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
    )
    return write(tmp / "p.yaml", "steps: [co.yaml, people.yaml]\n")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_every_row_not_sent(result: object, why: str) -> None:
    rows = results(result)
    assert [(r["step"], r["source_row"]) for r in rows] == [
        ("co", "2"),
        ("co", "3"),
        ("people", "2"),
        ("people", "3"),
        ("people", "4"),
    ]
    assert {r["status"] for r in rows} == {"failed"}
    assert all(r["error"].startswith(f"not sent: {why}") for r in rows), rows
    assert {r["record_id"] for r in rows} == {""}


def test_a_wrong_key_writes_a_report_with_every_row_not_sent(tmp_path: Path) -> None:
    pipeline = two_steps(tmp_path)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url, "sk_live_wrong9"))
        assert all_records(url, "contacts") == []
    assert isinstance(result.error, AuthError) and result.exit_code == EXIT_ABORTED
    s = result.summary
    assert "HTTP 401" in s["aborted"] and "/api/meta/schema" in s["aborted"]
    assert s["accounting_ok"] and s["dry_run"] is False
    t = s["totals"]
    counts = (t["rows_read"], t["failed"], t["not_sent"], t["created"], t["chunks"])
    assert counts == (5, 5, 5, 0, 0)
    assert [st["aborted"] for st in s["steps"]] == [str(result.error.message)] * 2
    assert_every_row_not_sent(result, "authentication failed")
    text = "".join(p.read_text() for p in result.report_dir.iterdir())
    assert "sk_live_wrong9" not in text
    assert "aborted" in (result.report_dir / "report.md").read_text()
    assert (result.report_dir / "failures.csv").read_text().count("not sent:") == 5


def test_a_5xx_on_the_users_fetch_after_the_retries_writes_the_report(tmp_path: Path) -> None:
    pipeline = two_steps(tmp_path)
    with served(tmp_path / "s.db", faults=["status:503:path=/api/meta/users"]) as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert isinstance(result.error, ApiError) and result.exit_code == EXIT_ABORTED
    aborted = result.summary["aborted"]
    assert "HTTP 503" in aborted and "/api/meta/users" in aborted
    assert result.summary["accounting_ok"]
    assert_every_row_not_sent(result, "service unavailable or unreachable: ")


def test_an_unreachable_target_in_a_dry_run_still_writes_the_report(tmp_path: Path) -> None:
    pipeline = two_steps(tmp_path)
    url = f"http://127.0.0.1:{closed_port()}"
    result = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
    assert isinstance(result.error, ApiError) and result.exit_code == EXIT_ABORTED
    s = result.summary
    assert s["dry_run"] is True and s["accounting_ok"] and "/api/meta/schema" in s["aborted"]
    assert (s["totals"]["rows_read"], s["totals"]["failed"]) == (5, 5)
    assert_every_row_not_sent(result, "service unavailable or unreachable: ")


def test_an_unreadable_source_is_a_note_on_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = two_steps(tmp_path)
    original = pipeline_module.build_plans

    def build(*args: Any, **kw: Any) -> Any:  # the source vanishes after the run's checks
        plans = original(*args, **kw)
        (tmp_path / "people.csv").unlink()
        return plans

    monkeypatch.setattr(pipeline_module, "build_plans", build)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url, "sk_live_x"))
    people = next(st for st in result.summary["steps"] if st["step"] == "people")
    assert "could not be read" in people["aborted"] and people["rows_read"] == 0
    assert [r["step"] for r in results(result)] == ["co", "co"]
    assert result.summary["accounting_ok"] and result.exit_code == EXIT_ABORTED

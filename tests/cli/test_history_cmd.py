"""``recordsync history`` through the real entry point, after real runs into the sandbox:
the table, --json, --since, and --key (created, updated, failed, deleted, with record ids)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import served, target

from recordsync.cli import main
from recordsync.cli.history_cmds import since_value
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out + err


def people(tmp: Path, rows: list[tuple[str, str]]) -> None:
    with open(tmp / "m.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Email"])
        w.writerows(rows)


def runs(tmp: Path) -> list[Any]:
    (tmp / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\nmirror_deletes: {enabled: true, max_share: 1.0}\n",
        encoding="utf-8",
    )
    path = tmp / "crm.yaml"
    path.write_text("name: crm\nsteps: [m.yaml]\n", encoding="utf-8")
    request = RunRequest(
        path,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
    )
    out = []
    with served(tmp / "s.db") as url:
        for rows in (
            [("Ann", "ann@h.example"), ("Ben", "ben@h.example"), ("Cy", "cy@h.example")],
            [("Ann B", "ann@h.example"), ("Ben", "ben@h.example"), ("Cy", "cy@h.example")],
            [("Ben", "ben@h.example"), ("Cy", "cy@h.example")],
        ):
            people(tmp, rows)
            out.append(run_pipeline(request, target=target(url)))
    return out


def test_history_lists_runs_and_follows_one_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, third = runs(tmp_path)
    db = str(tmp_path / "state.db")
    code, out = cli(["history", "crm", "--state-db", db], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["run", "started", "finished", "exit", "read"]
    ids = [line.split()[0] for line in lines[1:]]
    assert ids == [r.summary["run_id"] for r in (third, second, first)]
    code, out = cli(["history", "--state-db", db, "--json"], capsys)
    data = json.loads(out)
    assert [d["run_id"] for d in data] == ids and {d["pipeline"] for d in data} == {"crm"}
    assert data[2]["totals"]["created"] == 3 and data[1]["totals"]["updated"] == 1
    assert data[0]["totals"]["deleted"] == 1 and data[0]["exit_code"] == 0
    assert data[0]["steps"][0]["step"] == "m" and data[0]["report_dir"] == str(third.report_dir)
    code, out = cli(["history", "crm", "--state-db", db, "--since", "2999-01-01", "--json"], capsys)
    assert json.loads(out) == []
    code, out = cli(["history", "crm", "--state-db", db, "--since", "1d", "--json"], capsys)
    assert len(json.loads(out)) == 3

    code, out = cli(
        ["history", "crm", "--key", "ann@h.example", "--state-db", db, "--json"], capsys
    )
    events = json.loads(out)
    rid = events[0]["record_id"]
    # the key's last outcome, from the ledger (its creation and update were sends the
    # ledger held until the delete replaced them: not kept)
    assert rid is not None
    assert [(e["run_id"], e["status"], e["record_id"], e["key"]) for e in events] == [
        (third.summary["run_id"], "deleted", rid, "email:ann@h.example"),
    ]
    code, out = cli(["history", "crm", "--key", "email:ann@h.example", "--state-db", db], capsys)
    assert code == 0 and out.count("email:ann@h.example") == 2 and "deleted" in out  # + title
    code, out = cli(
        ["history", "crm", "--key", "ben@h.example", "--json", "--state-db", db], capsys
    )
    ben = json.loads(out)  # unchanged since its creation: never sent again
    assert [(e["run_id"], e["status"], e["source_row"]) for e in ben] == [
        (first.summary["run_id"], "created", None)
    ]
    assert ben[0]["record_id"] is not None and ben[0]["step"] == "m"
    code, out = cli(["history", "crm", "--key", "zed@h.example", "--state-db", db], capsys)
    assert code == 0 and "no kept run of crm sent or deleted the key 'zed@h.example'" in out


def test_history_refuses_a_key_without_a_pipeline_and_a_bad_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(["history", "--key", "x", "--state-db", str(tmp_path / "s.db")], capsys)
    assert code == 2 and "--key needs the PIPELINE" in out
    code, out = cli(
        ["history", "--since", "yesterday", "--state-db", str(tmp_path / "s.db")], capsys
    )
    assert code == 2 and "--since" in out and "7d" in out
    code, out = cli(["history", "--state-db", str(tmp_path / "none.db")], capsys)
    assert code == 0 and "no state database" in out


def test_since_takes_ages_dates_and_times() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert since_value("7d", now) == "2026-11-22T12:00:00Z"
    assert since_value("12h", now) == "2026-11-29T00:00:00Z"
    assert since_value("2026-11-01", now) == "2026-11-01T00:00:00Z"
    assert since_value("2026-11-01T02:00:00+01:00", now) == "2026-11-01T01:00:00Z"

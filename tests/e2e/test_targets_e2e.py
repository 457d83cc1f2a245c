"""The state belongs to a target, and the target is checked (state/targets.py,
nightly/target_check.py): two real sandboxes over loopback stand for two services."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from recordsync.cli import cli
from recordsync.core.errors import ConfigError
from recordsync.run.pipeline import run_pipeline
from recordsync.state import StateStore
from recordsync.state.targets import keys_of

from .support import REPO, all_records, loopback_client, served, target
from .test_idempotency_e2e import LEDGER_ONLY, deals_pipeline
from .test_ledger_e2e import request, totals, write_csv


def sample(tmp: Path) -> Path:
    for d in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / d, tmp / d)
    return tmp / "pipelines" / "nightly.yaml"


def test_a_second_target_gets_a_first_run_and_full_refresh_never_touches_its_records(
    tmp_path: Path,
) -> None:
    pipeline = sample(tmp_path)
    # a.db is served until b.db's runs are done: b.db's server cannot be given a.db's port,
    # under which the two (same URL, same users) would be one target
    with served(tmp_path / "a.db") as url_a, served(tmp_path / "b.db") as url:
        assert url != url_a
        first = run_pipeline(request(tmp_path, pipeline), target=target(url_a))
        in_a = {t: len(all_records(url_a, t)) for t in ("companies", "contacts", "deals")}
        assert totals(first)["created"] == 984
        with loopback_client(url) as client:  # another organization's records, ids 1..30
            for i in range(30):
                client.request("PUT", "/api/objects/companies", json={"name": f"Other Co {i}"})
        others = {r["id"]: r["name"] for r in all_records(url, "companies")}
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        refresh = run_pipeline(request(tmp_path, pipeline, full_refresh=True), target=target(url))
        in_b = {t: len(all_records(url, t)) for t in ("companies", "contacts", "deals")}
        after = {r["id"]: r["name"] for r in all_records(url, "companies")}
    # the state of a.db was not used in b.db: every row was created there
    assert totals(second)["created"] == 984 and totals(second)["rows_unchanged"] == 0
    assert any("first run of 'nightly' into" in w for w in second.summary["warnings"])
    assert in_b == {k: v + (30 if k == "companies" else 0) for k, v in in_a.items()}
    # --full-refresh matched by the ids learned in b.db only: the others are as they were
    assert all(after[i] == name for i, name in others.items())
    assert totals(refresh)["created"] == 0 and totals(refresh)["updated"] == 984
    with StateStore(tmp_path / "state.db") as store:
        assert len(keys_of(store.connection, "nightly")) == 2


def test_state_show_lists_every_target(tmp_path: Path) -> None:
    pipeline = sample(tmp_path)
    with served(tmp_path / "a.db") as url_a, served(tmp_path / "b.db") as url_b:  # two ports
        for url in (url_a, url_b):
            run_pipeline(request(tmp_path, pipeline), target=target(url))
    out = CliRunner().invoke(
        cli, ["state", "show", "nightly", "--state-db", str(tmp_path / "state.db")]
    ).output
    assert out.count("  target http://127.0.0.1:") == 2
    assert out.count("mapping deals: 295 keys") == 2


def test_records_deleted_or_edited_in_the_target_are_sent_again(tmp_path: Path) -> None:
    pipeline = sample(tmp_path)
    with served(tmp_path / "a.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        contacts = all_records(url, "contacts")[:20]
        deals = all_records(url, "deals")[:20]
        with loopback_client(url) as client:
            for c in contacts:
                client.delete("contacts", c["id"])
            for d in deals:
                client.request(
                    "PATCH", "/api/objects/deals", json={"id": d["id"], "fields": {"amount": 1}}
                )
        nightly = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live_contacts = {r["email"] for r in all_records(url, "contacts")}
        live_deals = {r["id"]: r for r in all_records(url, "deals")}
    assert first.summary["accounting_ok"] and nightly.summary["accounting_ok"]
    c, d = totals(nightly, "contacts"), totals(nightly, "deals")
    assert (c["created"], c["rows_sent"]) == (20, 20)
    assert (d["updated"], d["rows_sent"]) == (20, 20)
    assert {x["email"] for x in contacts} <= live_contacts
    # (an empty source cell writes nothing: the hand-edited amount stays on those deals)
    sourced = [x for x in deals if x["amount"] is not None]
    assert [live_deals[x["id"]]["amount"] for x in sourced] == [x["amount"] for x in sourced]
    warnings = " ".join(nightly.summary["warnings"])
    assert "20 contacts record(s) this pipeline wrote are no longer in the target" in warnings
    assert "20 deals record(s) this pipeline wrote were edited in the target" in warnings
    # and the run after that finds nothing to do
    with served(tmp_path / "a.db") as url:
        third = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert totals(third)["rows_sent"] == 0 and third.summary["warnings"] == []


def test_a_state_restored_from_an_older_backup_creates_nothing_twice(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        shutil.copy(tmp_path / "state.db", tmp_path / "backup.db")
        rows = [[f"D{i}", f"Deal {i}", "won"] for i in range(1, 54)]
        write_csv(tmp_path / "deals.csv", ["Deal ID", "Name", "Stage"], rows)
        grown = run_pipeline(request(tmp_path, pipeline), target=target(url))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp_path / 'state.db'}{suffix}").unlink(missing_ok=True)
        shutil.copy(tmp_path / "backup.db", tmp_path / "state.db")  # the older backup
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
        deals = all_records(url, "deals")
    assert totals(grown)["created"] == 50
    assert len(deals) == 53  # not 103: the 50 were found, not created again
    assert totals(again)["created"] == 0 and again.exit_code == 0
    assert any("created in the target since the last run" in w for w in again.summary["warnings"])


def test_unbound_state_is_refused_until_adopted(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        with StateStore(tmp_path / "state.db") as store:  # as a recordsync before targets
            conn = store.connection
            [key] = keys_of(conn, "deals-sync").values()
            conn.execute("UPDATE scopes SET pipeline = 'deals-sync' WHERE pipeline = ?", (key,))
            conn.execute("UPDATE runs SET pipeline = 'deals-sync' WHERE pipeline = ?", (key,))
            conn.execute("DELETE FROM targets")
        with pytest.raises(ConfigError, match="--adopt-state"):
            run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert len(all_records(url, "deals")) == 3  # nothing was sent
        adopted = run_pipeline(request(tmp_path, pipeline, adopt_state=True), target=target(url))
    assert totals(adopted)["rows_unchanged"] == 3 and totals(adopted)["rows_sent"] == 0

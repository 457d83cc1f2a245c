"""Nightly-sync features over loopback against the sandbox: the identity ledger (an e-mail
change is not a second contact), cross-object references, mirror deletes, change detection
on the sample pipeline, --full-refresh, and the pipeline name shared with `state show`."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recordsync.cli.state_cmds import state
from recordsync.core.errors import ConfigError, RunAborted
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore
from recordsync.tuning import spill

from .support import REPO, all_records, loopback_client, only_key, served, target


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def request(tmp: Path, pipeline: Path, **kw: Any) -> RunRequest:
    return RunRequest(
        pipeline,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **{"list_unchanged": True, **kw},  # every row's line, the unchanged ones too
    )


def totals(result: Any, step: str | None = None) -> dict[str, Any]:
    if step is None:
        return dict(result.summary["totals"])
    return next(s for s in result.summary["steps"] if s["step"] == step)


def results(result: Any) -> list[dict[str, str]]:
    with open(result.report_dir / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# -- the identity ledger ----------------------------------------------------------------
PEOPLE = [
    ["C1", "Ann", "ann@x.example"],
    ["C2", "Ben", "ben@x.example"],
    ["C3", "Cy", "cy@x.example"],
]


def contacts_pipeline(tmp: Path, *, by_id: bool) -> Path:
    write_csv(tmp / "people.csv", ["Contact ID", "Name", "Email"], PEOPLE)
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n"
        + ("ledger_key: {column: Contact ID}\nmatch_by_ledger_id: true\n" if by_id else ""),
    )
    return write(tmp / "people-sync.yaml", "steps: [people.yaml]\n")


@pytest.mark.parametrize("by_id", [True, False])
def test_an_email_change_updates_the_same_contact_when_matched_by_ledger_id(
    tmp_path: Path, by_id: bool
) -> None:
    pipeline = contacts_pipeline(tmp_path, by_id=by_id)
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        ben = next(r for r in all_records(url, "contacts") if r["email"] == "ben@x.example")
        changed = [row[:] for row in PEOPLE]
        changed[1][2] = "ben.carter@new.example"
        write_csv(tmp_path / "people.csv", ["Contact ID", "Name", "Email"], changed)
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = all_records(url, "contacts")
    assert totals(first)["created"] == 3
    t = totals(second)
    assert (t["rows_unchanged"], t["rows_sent"]) == (2, 1)
    if by_id:  # the stable key finds Ben's record id: updated, with the new e-mail
        assert (t["updated"], t["created"]) == (1, 0)
        assert len(held) == 3
        assert next(r for r in held if r["id"] == ben["id"])["email"] == "ben.carter@new.example"
        updated = [r for r in results(second) if r["status"] == "updated"]
        sent = [(r["match_by"], r["match_value"]) for r in updated]
        assert sent == [("id", str(ben["id"]))]  # the key it was really sent by
    else:  # keyed by e-mail, the new address is a new key: a second Ben
        assert (t["updated"], t["created"]) == (0, 1)
        assert len(held) == 4


# -- references -------------------------------------------------------------------------
def refs_pipeline(tmp: Path, on_missing: str, *, order: str = "companies, deals") -> Path:
    write_csv(
        tmp / "companies.csv",
        ["Company", "Website"],
        [["Acme Ltd", "https://www.Acme.com/"], ["Globex", "globex.io"], ["No Site Inc", ""]],
    )
    write_csv(
        tmp / "deals.csv",
        ["Deal", "Domain"],
        [
            ["D1", "acme.com"],
            ["D2", "http://globex.io/about"],
            ["D3", "unknown.example"],
            ["D4", ""],
        ],
    )
    write(
        tmp / "companies.yaml",
        "object_type: companies\nsource: {path: companies.csv}\nname: Company\nmatch_by: [name]\n"
        "fields: {domain: Website}\nledger_key: {column: Website, normalize: domain}\n",
    )
    write(
        tmp / "deals.yaml",
        "object_type: deals\nsource: {path: deals.csv}\nname: Deal\nmatch_by: [name]\n"
        "fields:\n  stage: {value: won}\n  company_id:\n    column: Domain\n"
        f"    ref: {{mapping: companies, on_missing: {on_missing}}}\n",
    )
    return write(
        tmp / "refs.yaml",
        f"name: refs\nsteps: [{order}]\n".replace(", ", ".yaml, ").replace("]", ".yaml]"),
    )


@pytest.mark.parametrize("on_missing", ["fail", "unset"])
def test_a_deal_gets_its_company_from_the_companies_ledger(tmp_path: Path, on_missing: str) -> None:
    pipeline = refs_pipeline(tmp_path, on_missing)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
        companies = {r["name"]: r["id"] for r in all_records(url, "companies")}
        deals = {r["name"]: r for r in all_records(url, "deals")}
    assert result.summary["accounting_ok"]
    assert deals["D1"]["company_id"] == companies["Acme Ltd"]
    assert deals["D2"]["company_id"] == companies["Globex"]
    assert deals["D4"].get("company_id") is None  # a blank value is no reference
    d3 = next(r for r in results(result) if r["match_value"] == "D3")
    if on_missing == "fail":
        assert "D3" not in deals and d3["status"] == "invalid"
        assert d3["error"] == (
            "company_id: no 'companies' record with key 'unknown.example' in the ledger of"
            " pipeline 'refs' (that key was never synced)"
        )
        assert result.exit_code == 1
    else:
        assert d3["status"] == "created" and deals["D3"].get("company_id") is None
        assert result.exit_code == 0
    # the company without a website is tracked by its name: the re-run sends nothing new
    with served(tmp_path / "s.db") as url:
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert totals(again)["rows_sent"] == 0


def test_a_reference_to_a_later_step_is_a_config_error_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    pipeline = refs_pipeline(tmp_path, "fail", order="deals, companies")
    with served(tmp_path / "s.db") as url, pytest.raises(ConfigError) as err:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert "step 'companies' runs after this step" in err.value.message
    assert err.value.key == "fields.company_id.ref.mapping"


# -- mirror deletes ---------------------------------------------------------------------
def mirror_pipeline(tmp: Path, rows: int, **limits: Any) -> Path:
    write_csv(tmp / "m.csv", ["Name", "Email"], [[f"P{i}", f"p{i}@m.example"] for i in range(rows)])
    opts = ", ".join(f"{k}: {v}" for k, v in {"enabled": "true", **limits}.items())
    write(
        tmp / "m.yaml",
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
        f"fields: {{email: Email}}\nmirror_deletes: {{{opts}}}\n",
    )
    return write(tmp / "mirror.yaml", "steps: [m.yaml]\n")


def keep_rows(tmp: Path, keep: list[int]) -> None:
    write_csv(tmp / "m.csv", ["Name", "Email"], [[f"P{i}", f"p{i}@m.example"] for i in keep])


@pytest.mark.parametrize("block", [None, 2])  # 2: the seen keys spilled to a file
def test_mirror_deletes_one_removed_row_is_one_delete(
    tmp_path: Path, block: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block is not None:
        monkeypatch.setattr(spill, "BLOCK", block)
    pipeline = mirror_pipeline(tmp_path, 10, max_share=0.5)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        gone = next(r for r in all_records(url, "contacts") if r["email"] == "p3@m.example")
        keep_rows(tmp_path, [i for i in range(10) if i != 3])
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = all_records(url, "contacts")
        # a record someone deleted in the target: the run's check of the target finds it
        # gone before the step (its ledger entry is marked deleted), so mirror deletes
        # have nothing left to delete and nothing fails
        with loopback_client(url) as client:
            client.delete("contacts", next(r["id"] for r in live if r["email"] == "p5@m.example"))
        keep_rows(tmp_path, [i for i in range(10) if i not in (3, 5)])
        third = run_pipeline(request(tmp_path, pipeline), target=target(url))
    s = totals(second, "m")
    assert (s["deleted"], s["delete_failed"], s["rows_unchanged"], s["rows_sent"]) == (1, 0, 9, 0)
    assert second.summary["accounting_ok"] and second.exit_code == 0
    assert len(live) == 9 and gone["id"] not in {r["id"] for r in live}
    assert (totals(third, "m")["deleted"], third.exit_code) == (0, 0)
    assert any("no longer in the target" in w for w in third.summary["warnings"])
    with StateStore(tmp_path / "state.db") as store:
        assert store.counts(only_key(store, "mirror"))["m"] == {"created": 8, "deleted": 2}


def test_mirror_deletes_above_the_limits_are_refused(tmp_path: Path) -> None:
    pipeline = mirror_pipeline(tmp_path, 10, max_share=0.25, max_count=5)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        keep_rows(tmp_path, [0, 1, 2, 3, 4, 5])
        refused = run_pipeline(request(tmp_path, pipeline), target=target(url))
        after_refusal = len(all_records(url, "contacts"))
        allowed = run_pipeline(
            request(tmp_path, pipeline, allow_mass_deletes=True), target=target(url)
        )
        after_allowed = len(all_records(url, "contacts"))
        keep_rows(tmp_path, [])  # an empty export
        empty = run_pipeline(
            request(tmp_path, pipeline, allow_mass_deletes=True), target=target(url)
        )
        after_empty = len(all_records(url, "contacts"))
    assert isinstance(refused.error, RunAborted) and refused.exit_code == 3
    assert "4 of 10 records (40.0%) left the source, above mirror_deletes.max_share 25%" in str(
        refused.error
    )
    assert "--allow-mass-deletes" in (refused.error.hint or "")
    assert refused.summary["accounting_ok"] and after_refusal == 10
    assert (totals(allowed, "m")["deleted"], after_allowed) == (4, 6)
    assert isinstance(empty.error, RunAborted) and "the source has no rows" in str(empty.error)
    assert after_empty == 6


# -- the sample nightly pipeline: change detection, full refresh, state show ---------------
def sample_copy(tmp: Path) -> Path:
    for d in ("configs", "pipelines", "sample_data"):
        shutil.copytree(REPO / d, tmp / d)
    return tmp / "pipelines" / "nightly.yaml"


def test_the_sample_nightly_pipeline_sends_only_what_changed(tmp_path: Path) -> None:
    pipeline = sample_copy(tmp_path)
    path = tmp_path / "sample_data" / "contacts.csv"
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        for n in (1, 2, 3):
            rows[n][4] = f"Head of Nightly Syncs {n}"  # Title
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
        third = run_pipeline(request(tmp_path, pipeline), target=target(url))
        full = run_pipeline(request(tmp_path, pipeline, full_refresh=True), target=target(url))
        counts = {t: len(all_records(url, t)) for t in ("companies", "contacts", "deals")}
    sent_first = totals(first)["rows_sent"]
    assert sent_first > 900 and totals(first)["created"] == sent_first
    assert (totals(second)["rows_sent"], totals(second)["rows_unchanged"]) == (0, sent_first)
    c = totals(third, "contacts")
    assert (c["rows_sent"], c["updated"], c["created"]) == (3, 3, 0)
    assert totals(third)["rows_sent"] == 3
    f = totals(full)
    assert (f["rows_sent"], f["rows_unchanged"], f["created"]) == (sent_first, 0, 0)
    assert counts == {s["object_type"]: s["created"] for s in first.summary["steps"]}
    assert all(r.summary["accounting_ok"] for r in (first, second, third, full))
    # `state show` finds the state under the pipeline's name, given the file
    shown = CliRunner().invoke(
        state, ["show", str(pipeline), "--state-db", str(tmp_path / "state.db"), "--json"]
    )
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["pipeline"] == "nightly" and data["last_run"]["run_id"] == full.summary["run_id"]
    assert sum(data["mappings"]["contacts"].values()) == totals(first, "contacts")["rows_sent"]


def test_state_show_uses_the_pipeline_name_not_the_file_name(tmp_path: Path) -> None:
    pipeline = contacts_pipeline(tmp_path, by_id=False)
    renamed = write(tmp_path / "file-name.yaml", "name: real-name\nsteps: [people.yaml]\n")
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, renamed), target=target(url))
    assert result.summary["pipeline"] == "real-name" and pipeline.exists()
    shown = CliRunner().invoke(
        state, ["show", str(renamed), "--state-db", str(tmp_path / "state.db"), "--json"]
    )
    data = json.loads(shown.output)
    assert data["pipeline"] == "real-name" and data["mappings"]["people"] == {"created": 3}


def test_a_retry_of_failed_rows_never_mirror_deletes(tmp_path: Path) -> None:
    from recordsync.run.retry import retry_report

    pipeline = mirror_pipeline(tmp_path, 10, max_share=0.5)
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
    rows = [[f"P{i}", f"p{i}@m.example"] for i in range(10)]
    rows[0][0], rows[1][0] = "P0 renamed", "P1 renamed"
    write_csv(tmp_path / "m.csv", ["Name", "Email"], rows)
    with served(tmp_path / "s.db", ["status:503:path=/batch"]) as url:
        failed = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert (totals(failed)["failed"], totals(failed)["deleted"]) == (2, 0)
    with served(tmp_path / "s.db") as url:
        retried = retry_report(failed.report_dir, request(tmp_path, pipeline), target=target(url))
        held = all_records(url, "contacts")
    # the retry's source holds only the 2 failed rows: mirroring it would delete 8 records
    assert retried.error is None and retried.exit_code == 0
    assert (totals(retried)["updated"], totals(retried)["deleted"]) == (2, 0)
    assert len(held) == 10 and {"P0 renamed", "P1 renamed"} <= {r["name"] for r in held}

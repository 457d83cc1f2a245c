"""Cross-object references in a dry run and without the state store: the dry run predicts
the rows the real run fails for a missing reference (ledger + rows its earlier steps would
create), never writes the state store, and `--no-state` refuses `ref` fields up front."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recordsync.core.errors import ConfigError
from recordsync.run.pipeline import run_pipeline
from recordsync.state import StateStore

from .support import all_records, served, target
from .test_ledger_e2e import refs_pipeline, request, results, totals, write_csv


def outcomes(result: Any, step: str) -> dict[str, tuple[str, str]]:
    return {
        r["match_value"]: (r["status"], r["error"]) for r in results(result) if r["step"] == step
    }


def test_a_dry_run_fails_the_references_the_real_run_fails_with_the_same_message(
    tmp_path: Path,
) -> None:
    pipeline = refs_pipeline(tmp_path, "fail")
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        assert all_records(url, "companies") == []
        assert not (tmp_path / "state.db").exists()  # a dry run creates no state store
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
    dry_deals, real_deals = outcomes(dry, "deals"), outcomes(real, "deals")
    assert dry_deals["D3"] == (
        "invalid",
        "company_id: no 'companies' record with key 'unknown.example' in the ledger of"
        " pipeline 'refs' (that key was never synced)",
    )
    assert dry_deals["D3"] == real_deals["D3"]
    assert {k for k, (s, _) in dry_deals.items() if s == "valid"} == {"D1", "D2", "D4"}
    assert {k for k, (s, _) in real_deals.items() if s == "created"} == {"D1", "D2", "D4"}
    assert totals(dry, "deals")["rows_sent"] == totals(real, "deals")["rows_sent"] == 3


def test_a_dry_run_uses_the_ledger_and_the_rows_it_would_create_and_writes_nothing(
    tmp_path: Path,
) -> None:
    pipeline = refs_pipeline(tmp_path, "fail")
    with served(tmp_path / "s.db") as url:
        run_pipeline(request(tmp_path, pipeline), target=target(url))
        # Globex leaves the companies source (its ledger entry stays), NewCo is new, and a
        # second row with Acme's domain is a duplicate ledger key (duplicates: last, the
        # default: the second row wins, as for a match key)
        write_csv(
            tmp_path / "companies.csv",
            ["Company", "Website"],
            [["Acme Ltd", "acme.com"], ["NewCo", "newco.example"], ["Acme Two", "www.acme.com"]],
        )
        write_csv(
            tmp_path / "deals.csv",
            ["Deal", "Domain"],
            [["D1", "acme.com"], ["D2", "globex.io"], ["D5", "newco.example"], ["D6", "no.pe"]],
        )
        with StateStore(tmp_path / "state.db") as store:
            before = store.counts("refs")
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        with StateStore(tmp_path / "state.db") as store:
            assert store.counts("refs") == before
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
    for step in ("companies", "deals"):
        dry_bad = {k: e for k, (s, e) in outcomes(dry, step).items() if s != "valid"}
        real_bad = {
            k: e
            for k, (s, e) in outcomes(real, step).items()
            if s in ("invalid", "duplicate", "merged", "failed")
        }
        assert dry_bad == real_bad, step
    assert set(outcomes(real, "deals")) == {"D1", "D2", "D5", "D6"}
    assert outcomes(dry, "deals")["D6"][0] == "invalid"
    assert outcomes(dry, "companies")["Acme Ltd"][0] == "duplicate"
    assert outcomes(real, "companies")["Acme Two"][0] == "updated"  # Acme's record, its key


@pytest.mark.parametrize("dry_run", [False, True])
def test_no_state_refuses_ref_fields_before_anything_is_sent(tmp_path: Path, dry_run: bool) -> None:
    pipeline = refs_pipeline(tmp_path, "unset")
    with served(tmp_path / "s.db") as url:
        with pytest.raises(ConfigError) as err:
            run_pipeline(
                request(tmp_path, pipeline, state=False, dry_run=dry_run), target=target(url)
            )
        assert all_records(url, "companies") == []
    assert err.value.key == "fields.company_id.ref"
    assert err.value.file is not None and err.value.file.endswith("deals.yaml")
    assert "resolved from the state store" in err.value.message
    assert "--no-state" in err.value.message
    assert err.value.hint == "run without --no-state, or remove the ref"
    assert not (tmp_path / "reports").exists()

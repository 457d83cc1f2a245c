"""Every mapping shape is repeatable or says so loudly (config/idempotency.py): a mapping with
no key warns in the run and the dry run (stderr, report.md, summary.json); ``require_key``
makes it an error; a ledger-only mapping whose state store was lost refuses to create
everything again unless ``--allow-recreate``. Against the sandbox over loopback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recordsync.config import load_mapping
from recordsync.core.errors import ConfigError
from recordsync.run.pipeline import run_pipeline

from .support import KEY, all_records, served, target
from .test_ledger_e2e import request, write, write_csv

DEALS = [["D1", "Alpha", "won"], ["D2", "Beta", "lost"], ["D3", "Alpha", "won"]]


def deals_pipeline(tmp: Path, keys: str) -> Path:
    write_csv(tmp / "deals.csv", ["Deal ID", "Name", "Stage"], DEALS)
    write(
        tmp / "deals.yaml",
        "object_type: deals\nsource: {path: deals.csv}\nname: Name\nfields: {stage: Stage}\n"
        + keys,
    )
    return write(tmp / "deals-sync.yaml", "name: deals-sync\nsteps: [deals.yaml]\n")


LEDGER_ONLY = "ledger_key: Deal ID\nmatch_by_ledger_id: true\n"


def test_a_mapping_with_no_key_warns_in_the_dry_run_and_the_run(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, "")
    with served(tmp_path / "s.db") as url:
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        real = run_pipeline(request(tmp_path, pipeline), target=target(url))
    for result in (dry, real):
        [warning] = result.summary["warnings"]
        assert "step 'deals'" in warning and "every run creates a new deals record" in warning
        saved = json.loads((result.report_dir / "summary.json").read_text())
        assert saved["warnings"] == [warning]
        assert f"**warning**: {warning}" in (result.report_dir / "report.md").read_text()


def test_keyed_mappings_do_not_warn(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
    assert result.summary["warnings"] == []


def test_a_ledger_only_mapping_without_state_warns(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline, state=False), target=target(url))
    [warning] = result.summary["warnings"]
    assert "(--no-state)" in warning


@pytest.mark.parametrize("keys", ["", LEDGER_ONLY])
def test_require_key_makes_a_mapping_without_a_service_key_an_error(
    tmp_path: Path, keys: str
) -> None:
    deals_pipeline(tmp_path, keys + "require_key: true\n")
    with pytest.raises(ConfigError) as info:
        load_mapping(tmp_path / "deals.yaml")
    e = info.value
    assert (e.key, e.exit_code) == ("require_key", 2) and e.file == str(tmp_path / "deals.yaml")
    assert "no key the service can match on" in str(e)
    write(tmp_path / "deals.yaml", (tmp_path / "deals.yaml").read_text() + "match_by: [name]\n")
    assert load_mapping(tmp_path / "deals.yaml").require_key


def test_a_lost_state_store_refuses_to_create_everything_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli: Callable[..., int]
) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert first.summary["totals"]["created"] == 3
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert again.summary["totals"]["rows_unchanged"] == 3
        (tmp_path / "state.db").unlink()  # the state store is lost
        for suffix in ("-wal", "-shm"):
            (tmp_path / f"state.db{suffix}").unlink(missing_ok=True)
        with pytest.raises(ConfigError) as info:
            run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert len(all_records(url, "deals")) == 3  # nothing was sent
        dry = run_pipeline(request(tmp_path, pipeline, dry_run=True), target=target(url))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RECORDSYNC_API_KEY", KEY)
            args = ["run", str(pipeline), "--base-url", url, "-q"]
            args += ["--state-db", str(tmp_path / "state.db"), "--report-dir", str(tmp_path / "r")]
            code = cli(*args)
            err = capsys.readouterr().err
            forced = cli(*args, "--allow-recreate")
        records = all_records(url, "deals")
    text = str(info.value)
    assert info.value.exit_code == 2 and "step 'deals'" in text and "--allow-recreate" in text
    assert "the state store was lost" in text and "nothing was sent" in text
    assert any("the real run would stop" in w for w in dry.summary["warnings"])
    assert code == 2 and "--allow-recreate" in err and "step 'deals'" in err
    assert forced == 0 and len(records) == 6  # told to: every row created again


def test_a_first_run_into_an_empty_type_is_not_refused(tmp_path: Path) -> None:
    pipeline = deals_pipeline(tmp_path, LEDGER_ONLY)
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, pipeline), target=target(url))
    assert result.summary["totals"]["created"] == 3 and result.error is None

"""The Dagster asset, materialized in-process against the embedded or a served sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import KEY, served
from tests.integrations.support import clean_mapping, require

dg = require("dagster")

from recordsync.integrations.dagster import ROWS_OK_CHECK, asset_name, recordsync_asset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::Warning:dagster")


def _materialization(result: Any) -> dict[str, Any]:
    (event,) = result.get_asset_materialization_events()
    return dict(event.materialization.metadata)


def _retries(result: Any) -> list[Any]:
    return [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]


def _check(result: Any) -> Any:
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == ROWS_OK_CHECK
    return evaluation


def test_a_clean_pipeline_materializes_with_its_totals_and_report(project: Path) -> None:
    asset = recordsync_asset(clean_mapping(project))
    assert asset.key == dg.AssetKey(["clean"])
    result = dg.materialize([asset])
    assert result.success
    meta = _materialization(result)
    assert meta["exit_code"].value == 0
    assert meta["accounting_ok"].value is True
    assert meta["created"].value == 3 and meta["rows_not_ok"].value == 0
    assert meta["steps"].value["clean"]["created"] == 3
    html = Path(meta["report_html"].value)
    assert html.is_file() and html.parent.parent == project / "reports"
    assert "| clean |" in meta["step_counts"].value
    assert _check(result).passed


def test_rows_not_ok_fail_the_materialization_by_default(project: Path) -> None:
    retry = dg.RetryPolicy(max_retries=2)
    result = dg.materialize(
        [recordsync_asset("pipelines/nightly.yaml", state_db=project / "s.db", retry_policy=retry)],
        raise_on_error=False,
    )
    assert not result.success
    assert not _retries(result)  # a rerun cannot fix rows not ok
    (event,) = result.get_step_failure_events()
    user = event.step_failure_data.user_failure_data
    assert "exited 1: 16 invalid, 1 duplicate rows" in user.description
    meta = dict(user.metadata)
    assert meta["exit_code"].value == 1 and meta["rows_not_ok"].value == 17
    assert Path(meta["report_html"].value).is_file()
    assert (project / "s.db").is_file()  # state_db reached the run


def test_accept_rows_not_ok_materializes_with_a_warning_check(project: Path) -> None:
    asset = recordsync_asset("pipelines/nightly.yaml", accept_rows_not_ok=True, group_name="crm")
    result = dg.materialize([asset])
    assert result.success
    meta = _materialization(result)
    assert meta["exit_code"].value == 1 and meta["rows_not_ok"].value == 17
    assert set(meta["steps"].value) == {"companies", "contacts", "deals"}
    check = _check(result)
    assert not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert "failures.csv" in check.description


def test_a_config_error_fails_without_retries_and_names_the_file(project: Path) -> None:
    bad = project / "bad.yaml"
    bad.write_text("object_type: companies\nsource: {path: missing.csv}\n", encoding="utf-8")
    result = dg.materialize(
        [recordsync_asset(bad, name="bad", retry_policy=dg.RetryPolicy(max_retries=2))],
        raise_on_error=False,
    )
    assert not result.success
    (event,) = result.get_step_failure_events()
    user = event.step_failure_data.user_failure_data
    assert "exited 2" in user.description and "bad.yaml" in user.description
    assert dict(user.metadata)["exit_code"].value == 2
    # allow_retries=False: the retry policy does not run the step again
    assert not _retries(result)


def test_the_target_comes_from_the_environment_and_the_key_never_shows(
    project: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with served(project / "served.db") as url:
        monkeypatch.setenv("RECORDSYNC_BASE_URL", url)
        monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
        result = dg.materialize([recordsync_asset(clean_mapping(project))])
        monkeypatch.setenv("RECORDSYNC_API_KEY", KEY + "x")  # a wrong key: exit 3, retryable
        retry = dg.RetryPolicy(max_retries=1)
        wrong = dg.materialize(
            [recordsync_asset(clean_mapping(project), retry_policy=retry)], raise_on_error=False
        )
    assert result.success
    assert _materialization(result)["target"].value == url
    assert len(_retries(wrong)) == 1  # exit 3: the retry policy applies
    (event,) = wrong.get_step_failure_events()
    user = event.step_failure_data.user_failure_data
    assert "exited 3" in user.description and "RECORDSYNC_API_KEY" in user.description
    assert Path(dict(user.metadata)["report_dir"].value).is_dir()
    seen = repr([*result.all_events, *wrong.all_events]) + caplog.text
    assert KEY not in seen


def test_asset_names_are_dagster_names() -> None:
    assert asset_name("pipelines/nightly-crm.v2.yaml") == "nightly_crm_v2"

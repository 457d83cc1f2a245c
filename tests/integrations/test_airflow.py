"""The Airflow operator: ``execute(context)`` run directly against the embedded or a served
sandbox (a DAG test would need Airflow's metadata database)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import KEY, served
from tests.integrations.support import clean_mapping, require

pytestmark = pytest.mark.filterwarnings("ignore::Warning")  # Airflow's own, at import
Out = pytest.CaptureFixture[str]


class TaskInstance:
    """What the operator uses of Airflow's task instance: ``xcom_push``."""

    def __init__(self) -> None:
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = json.loads(json.dumps(value))  # XCom values are JSON


LoggerState = tuple[list[logging.Handler], bool, int, bool]


def _loggers() -> dict[str, LoggerState]:
    named = logging.Logger.manager.loggerDict.items()
    every = [("", logging.getLogger())]
    every += [(n, v) for n, v in named if isinstance(v, logging.Logger)]
    return {n: (list(lg.handlers), lg.propagate, lg.level, lg.disabled) for n, lg in every}


def _restore(before: dict[str, LoggerState]) -> None:
    """Undo what Airflow's logging setup did to loggers not its own (the root logger's
    handler and level, uvicorn's and httpx's loggers): other tests read stdout and logs."""
    for name in _loggers():
        if name.startswith("airflow"):
            continue
        lg = logging.getLogger(name or None)
        handlers, lg.propagate, level, lg.disabled = before.get(name, ([], True, 0, False))
        lg.handlers[:] = handlers
        lg.setLevel(level)


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Airflow imported with its home in a temporary directory, the loggers it configures
    on import (besides its own) put back as they were."""
    before = _loggers()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow")))
        sdk = require("airflow.sdk")
        from recordsync.integrations import airflow as integration
    _restore(before)
    yield integration
    assert sdk is not None


def _run(op: Any, ti: TaskInstance | None = None) -> Any:
    return op.execute({"ti": ti or TaskInstance()})


def _task_log(capsys: Out, caplog: pytest.LogCaptureFixture) -> str:
    """The task's log: Airflow 3 writes it through structlog to stdout."""
    return capsys.readouterr().out + caplog.text


def test_a_clean_pipeline_returns_its_totals_and_logs_the_report(
    airflow: Any, project: Path, capsys: Out, caplog: pytest.LogCaptureFixture
) -> None:
    op = airflow.RecordsyncOperator(task_id="clean", pipeline=str(clean_mapping(project)))
    meta = _run(op)
    assert json.loads(json.dumps(meta)) == meta  # the XCom return_value
    assert meta["exit_code"] == 0 and meta["accounting_ok"] is True
    assert meta["totals"]["created"] == 3 and meta["steps"]["clean"]["created"] == 3
    assert Path(meta["report_html"]).is_file()
    log = _task_log(capsys, caplog)
    assert f"report: {meta['report_html']}" in log
    assert "step clean: rows_read=3" in log


def test_rows_not_ok_fail_the_task_and_push_the_summary(airflow: Any, project: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    ti = TaskInstance()
    op = airflow.RecordsyncOperator(task_id="nightly", pipeline="pipelines/nightly.yaml")
    with pytest.raises(AirflowFailException) as info:  # never retried: a rerun cannot fix it
        _run(op, ti)
    assert "exited 1: 16 invalid, 1 duplicate rows: see" in str(info.value)
    pushed = ti.xcom[airflow.XCOM_KEY]
    assert pushed["exit_code"] == 1 and pushed["totals"]["rows_not_ok"] == 17
    assert Path(pushed["report_dir"], "failures.csv").is_file()


def test_accept_rows_not_ok_succeeds_with_a_warning(
    airflow: Any, project: Path, capsys: Out, caplog: pytest.LogCaptureFixture
) -> None:
    op = airflow.RecordsyncOperator(
        task_id="nightly", pipeline="pipelines/nightly.yaml", accept_rows_not_ok=True
    )
    meta = _run(op)
    assert meta["exit_code"] == 1 and meta["totals"]["rows_not_ok"] == 17
    warned = [line for line in _task_log(capsys, caplog).splitlines() if "warning" in line]
    assert any("accepted (accept_rows_not_ok): 16 invalid" in line for line in warned)


def test_a_config_error_fails_the_task_for_good(airflow: Any, project: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    ti = TaskInstance()
    op = airflow.RecordsyncOperator(task_id="x", pipeline="pipelines/missing.yaml")
    with pytest.raises(AirflowFailException, match=r"exited 2: pipelines/missing.yaml"):
        _run(op, ti)
    assert ti.xcom[airflow.XCOM_KEY]["exit_code"] == 2


def test_the_target_comes_from_the_environment_and_the_key_never_shows(
    airflow: Any,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Out,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    caplog.set_level(logging.DEBUG)
    ti = TaskInstance()
    with served(project / "served.db") as url:
        monkeypatch.setenv("RECORDSYNC_BASE_URL", url)
        monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
        op = airflow.RecordsyncOperator(task_id="clean", pipeline=str(clean_mapping(project)))
        meta = _run(op)
        monkeypatch.setenv("RECORDSYNC_API_KEY", KEY + "x")  # a wrong key: exit 3
        with pytest.raises(AirflowException) as info:
            _run(op, ti)
    assert meta["target"] == url
    assert "exited 3" in str(info.value) and "RECORDSYNC_API_KEY" in str(info.value)
    assert not isinstance(info.value, AirflowFailException)  # retried as `retries` say
    assert Path(ti.xcom[airflow.XCOM_KEY]["report_dir"]).is_dir()
    log = _task_log(capsys, caplog)
    assert KEY not in json.dumps([meta, ti.xcom]) + str(info.value) + log


def test_the_dry_run_flag_is_not_airflows_dry_run_method(airflow: Any, project: Path) -> None:
    op = airflow.RecordsyncOperator(
        task_id="clean", pipeline=str(clean_mapping(project)), dry_run=True
    )
    meta = _run(op)
    assert meta["dry_run"] is True and meta["totals"]["created"] == 0
    assert callable(op.dry_run)


def test_templated_options_are_rendered_before_the_run(airflow: Any, project: Path) -> None:
    op = airflow.RecordsyncOperator(
        task_id="clean",
        pipeline=str(clean_mapping(project)),
        report_dir=str(project / "reports-{{ ds }}"),
        state_db=str(project / "state-{{ ds }}.db"),
        full_refresh=True,
    )
    op.render_template_fields({"ds": "2026-01-02"})
    meta = _run(op)
    assert Path(meta["report_dir"]).parent == project / "reports-2026-01-02"
    assert (project / "state-2026-01-02.db").is_file() and op.options.full_refresh


def test_importing_airflow_leaves_other_loggers_as_they_were(airflow: Any) -> None:
    assert airflow.RecordsyncOperator is not None
    uvicorn = logging.getLogger("uvicorn.error")
    assert uvicorn.propagate and not uvicorn.handlers  # (the sandbox sets its level)
    assert logging.getLogger("httpx").level == logging.NOTSET
    assert not [h for h in logging.getLogger().handlers if "airflow" in type(h).__module__]
    assert all(type(h).__module__.startswith("_pytest") for h in logging.getLogger().handlers)

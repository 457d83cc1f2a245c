"""The operator in a real DAG run: ``dag.test()`` in a subprocess, with its own Airflow home
and metadata database (Airflow's Task Runner, its XCom table and its retry rules)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integrations.support import clean_mapping, require_installed

REPO = Path(__file__).resolve().parents[2]

DAG_FILE = """
import json, sys
from datetime import datetime, timedelta

from airflow.sdk import DAG
from recordsync.integrations.airflow import RecordsyncOperator

PROJECT = sys.argv[1]
with DAG("recordsync_test", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
    RecordsyncOperator(task_id="clean", pipeline=PROJECT + "/clean.yaml")
    RecordsyncOperator(
        task_id="accepted", pipeline=PROJECT + "/pipelines/nightly.yaml", accept_rows_not_ok=True
    )
    RecordsyncOperator(
        task_id="rows_not_ok",
        pipeline=PROJECT + "/pipelines/nightly.yaml",
        retries=3,
        retry_delay=timedelta(0),
    )
    RecordsyncOperator(
        task_id="config_error",
        pipeline=PROJECT + "/pipelines/missing.yaml",
        retries=3,
        retry_delay=timedelta(0),
    )

if __name__ == "__main__":
    run = dag.test()
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = {
            f"{x.task_id}.{x.key}": x.value
            for x in session.query(XComModel).filter(XComModel.dag_id == "recordsync_test")
        }
    states = {ti.task_id: [str(ti.state), ti.try_number] for ti in run.get_task_instances()}
    print("RESULT " + json.dumps({"run": str(run.state), "tasks": states, "xcom": xcoms}))
"""


@pytest.mark.slow
def test_a_dag_run_keeps_the_summary_in_xcom_and_retries_no_run_a_rerun_cannot_fix(
    project: Path, tmp_path: Path
) -> None:
    require_installed("airflow")
    clean_mapping(project)
    home = tmp_path / "airflow"
    (home / "dags").mkdir(parents=True)
    dag_file = home / "dags" / "recordsync_test.py"
    dag_file.write_text(DAG_FILE, encoding="utf-8")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    migrate = [sys.executable, "-m", "airflow", "db", "migrate"]
    subprocess.run(migrate, env=env, cwd=project, check=True, capture_output=True)
    done = subprocess.run(
        [sys.executable, str(dag_file), str(project)],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    tasks, xcom = result["tasks"], result["xcom"]
    assert tasks["clean"][0] == "success" and tasks["accepted"][0] == "success"
    assert tasks["config_error"] == ["failed", 1]  # AirflowFailException: no retry
    assert tasks["rows_not_ok"] == ["failed", 1]
    assert result["run"] == "failed"
    assert xcom["clean.return_value"]["totals"]["created"] == 3
    assert xcom["accepted.return_value"]["totals"]["rows_not_ok"] == 17
    assert Path(xcom["accepted.return_value"]["report_html"]).is_file()
    assert xcom["config_error.recordsync"]["exit_code"] == 2
    assert "missing.yaml" in xcom["config_error.recordsync"]["error"]
    assert xcom["rows_not_ok.recordsync"]["totals"]["rows_not_ok"] == 17
    assert "accepted (accept_rows_not_ok): 16 invalid" in done.stdout

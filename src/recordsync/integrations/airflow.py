"""Airflow: ``RecordsyncOperator``, a task that runs a pipeline file
(``pip install 'recordsync[airflow]'``, Airflow 3).

    from airflow.sdk import DAG
    from recordsync.integrations.airflow import RecordsyncOperator

    with DAG("recordsync_nightly", schedule="15 2 * * *", catchup=False):
        RecordsyncOperator(
            task_id="nightly",
            pipeline="/srv/recordsync/pipelines/nightly.yaml",
            state_db="/data/recordsync/state.db",
            report_dir="/data/recordsync/reports",
        )

The task logs the totals and the path of report.html and returns the run's metadata
(totals, ``accounting_ok``, per-step counts, the report), which Airflow keeps as the XCom
``return_value``; a failing task pushes the same under the key ``recordsync`` first, for a
downstream alerting task. Exit 1 (rows not ok) fails the task unless
``accept_rows_not_ok=True`` (then it is logged as a warning). Exits 1 and 2 (nothing sent)
raise :class:`AirflowFailException`, which Airflow never retries; exit 3 (aborted) raises
:class:`AirflowException`, retried as the task's ``retries`` say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from recordsync.integrations.outcome import SyncOutcome, run_sync

XCOM_KEY = "recordsync"


class RecordsyncOperator(BaseOperator):  # type: ignore[misc,unused-ignore]  # Any: no airflow
    """Run ``pipeline`` like ``recordsync run`` (same target resolution: ``profile`` or
    ``base_url``, else ``RECORDSYNC_BASE_URL``/``RECORDSYNC_PROFILE`` in the worker's
    environment, else the pipeline's ``target:``). The API key is read from the worker's
    environment only, never from an argument (Airflow shows a task's arguments in its UI).
    Relative paths are relative to the worker's working directory: give ``state_db`` and
    ``report_dir`` on a persistent volume."""

    template_fields: Sequence[str] = ("pipeline", "profile", "report_dir", "state_db")
    ui_color = "#d7ecf9"

    def __init__(
        self,
        *,
        pipeline: str,
        accept_rows_not_ok: bool = False,
        dry_run: bool = False,
        profile: str | None = None,
        base_url: str | None = None,
        report_dir: str | None = None,
        state_db: str | None = None,
        full_refresh: bool = False,
        sandbox_seed: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline = pipeline
        self.accept_rows_not_ok = accept_rows_not_ok
        self.recordsync_dry_run = dry_run  # BaseOperator.dry_run is a method
        self.profile = profile
        self.base_url = base_url
        self.report_dir = report_dir
        self.state_db = state_db
        self.full_refresh = full_refresh
        self.sandbox_seed = sandbox_seed

    def execute(self, context: Context) -> dict[str, Any]:
        outcome = run_sync(
            self.pipeline,
            dry_run=self.recordsync_dry_run,
            profile=self.profile,
            base_url=self.base_url,
            report_dir=self.report_dir,
            state_db=self.state_db,
            full_refresh=self.full_refresh,
            sandbox_seed=self.sandbox_seed,
        )
        meta = outcome.metadata()
        self._log_outcome(outcome, meta)
        failure = outcome.failure(self.accept_rows_not_ok)
        if failure is None:
            if outcome.rows_not_ok:
                self.log.warning("accepted (accept_rows_not_ok): %s", outcome.reason())
            return meta
        ti = context.get("ti")
        if ti is not None:  # the return value is not kept when the task fails
            ti.xcom_push(key=XCOM_KEY, value=meta)
        if not outcome.retry_may_help():
            raise AirflowFailException(failure)
        raise AirflowException(failure)

    def _log_outcome(self, outcome: SyncOutcome, meta: dict[str, Any]) -> None:
        self.log.info("recordsync run %s: exit %d", self.pipeline, outcome.exit_code)
        if "run_id" not in meta:
            return
        totals = ", ".join(f"{k}={v}" for k, v in meta["totals"].items() if v)
        self.log.info("run %s, accounting_ok=%s: %s", meta["run_id"], meta["accounting_ok"], totals)
        for step, counts in meta["steps"].items():
            self.log.info("step %s: %s", step, ", ".join(f"{k}={v}" for k, v in counts.items()))
        for warning in meta["warnings"]:
            self.log.warning("recordsync: %s", warning)
        self.log.info("report: %s", meta["report_html"])

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
from dataclasses import replace
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from recordsync.integrations.outcome import SyncOptions, SyncOutcome, run_sync

XCOM_KEY = "recordsync"
TEMPLATED_OPTIONS = ("profile", "report_dir", "state_db")
"""The run options Airflow renders as templates (attributes of the operator, as Airflow wants)."""


class RecordsyncOperator(BaseOperator):  # type: ignore[misc,unused-ignore]  # Any: no airflow
    """Run ``pipeline`` like ``recordsync run`` (same target resolution: ``profile`` or
    ``base_url``, else ``RECORDSYNC_BASE_URL``/``RECORDSYNC_PROFILE`` in the worker's
    environment, else the pipeline's ``target:``). The API key is read from the worker's
    environment only, never from an argument (Airflow shows a task's arguments in its UI).
    Relative paths are relative to the worker's working directory: give ``state_db`` and
    ``report_dir`` on a persistent volume. The run's options
    (:class:`~recordsync.integrations.outcome.SyncOptions`: ``dry_run``, ``profile``,
    ``base_url``, ``report_dir``, ``state_db``, ``full_refresh``, ``sandbox_seed``) are keyword
    arguments by name, over ``options``; the others go to Airflow's ``BaseOperator``."""

    template_fields: Sequence[str] = ("pipeline", *TEMPLATED_OPTIONS)
    ui_color = "#d7ecf9"

    def __init__(
        self,
        *,
        pipeline: str,
        accept_rows_not_ok: bool = False,
        options: SyncOptions | None = None,
        **kwargs: Any,
    ) -> None:
        operator_kwargs = dict(kwargs)  # dry_run is ours (BaseOperator.dry_run is a method)
        run_options = SyncOptions.take(operator_kwargs, options)
        super().__init__(**operator_kwargs)
        self.options = run_options
        self.pipeline = pipeline
        self.accept_rows_not_ok = accept_rows_not_ok
        for name in TEMPLATED_OPTIONS:
            setattr(self, name, getattr(self.options, name))

    def execute(self, context: Context) -> dict[str, Any]:
        rendered = {name: getattr(self, name) for name in TEMPLATED_OPTIONS}
        outcome = run_sync(self.pipeline, replace(self.options, **rendered))
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

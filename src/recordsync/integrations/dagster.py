"""Dagster: ``recordsync_asset(pipeline)``, an asset that runs a pipeline file
(``pip install 'recordsync[dagster]'``).

    from dagster import Definitions, ScheduleDefinition, define_asset_job
    from recordsync.integrations.dagster import recordsync_asset

    nightly = recordsync_asset("pipelines/nightly.yaml", state_db="/data/recordsync/state.db")
    defs = Definitions(
        assets=[nightly],
        schedules=[ScheduleDefinition(job=define_asset_job("nightly_job", [nightly]),
                                      cron_schedule="15 2 * * *")],
    )

A materialization carries the run's totals (numbers Dagster plots run over run),
``accounting_ok``, the per-step counts and the path of report.html. Exit 1 (rows not ok)
fails the run unless ``accept_rows_not_ok=True``: then it materializes, with the asset check
``rows_ok`` failed at WARN severity. Exits 1 and 2 (nothing sent) raise a
:class:`dagster.Failure` that no retry policy repeats; exit 3 (aborted) a retryable one.
"""

# no `from __future__ import annotations`: Dagster reads the context annotation as a type
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import dagster as dg

from recordsync.integrations.outcome import SyncOptions, SyncOutcome, run_sync

ROWS_OK_CHECK = "rows_ok"


def asset_name(pipeline: str | Path) -> str:
    """``pipelines/nightly-crm.yaml`` → ``nightly_crm`` (Dagster names: letters, digits, _)."""
    return re.sub(r"\W", "_", Path(pipeline).stem, flags=re.ASCII) or "recordsync"


def dagster_metadata(outcome: SyncOutcome) -> dict[str, Any]:
    """The outcome's metadata in Dagster's types: totals as top-level numbers, the report
    as paths, the per-step counts as a table and as JSON."""
    meta = outcome.metadata()
    out: dict[str, Any] = {
        "exit_code": meta["exit_code"],
        "pipeline": dg.MetadataValue.path(meta["pipeline"]),
    }
    if "error" in meta:
        out["error"] = dg.MetadataValue.text(meta["error"])
    if "run_id" not in meta:
        return out
    out.update(meta["totals"])
    out.update(
        run_id=meta["run_id"],
        target=dg.MetadataValue.text(str(meta["target"])),
        dry_run=meta["dry_run"],
        accounting_ok=meta["accounting_ok"],
        report_html=dg.MetadataValue.path(meta["report_html"]),
        report_dir=dg.MetadataValue.path(meta["report_dir"]),
        warnings=dg.MetadataValue.json(meta["warnings"]),
        mirror_deletes_skipped=dg.MetadataValue.json(meta["mirror_deletes_skipped"]),
        steps=dg.MetadataValue.json(meta["steps"]),
        step_counts=dg.MetadataValue.md(_steps_table(meta["steps"])),
    )
    return out


def _steps_table(steps: dict[str, dict[str, int]]) -> str:
    if not steps:
        return "(no steps)"
    columns = list(next(iter(steps.values())))
    lines = ["| step | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, counts in steps.items():
        lines.append(f"| {name} | " + " | ".join(str(counts[c]) for c in columns) + " |")
    return "\n".join(lines)


def recordsync_asset(
    pipeline: str | Path,
    *,
    name: str | None = None,
    key_prefix: Sequence[str] = (),
    accept_rows_not_ok: bool = False,
    options: SyncOptions | None = None,
    **kwargs: Any,
) -> dg.AssetsDefinition:
    """An asset that runs ``pipeline`` like ``recordsync run`` (same target resolution:
    ``profile``/``base_url``, else ``RECORDSYNC_BASE_URL``/``RECORDSYNC_PROFILE`` in the
    worker's environment, else the pipeline's ``target:``). The API key is read from the
    worker's environment only. Relative paths are relative to the worker's working directory:
    give ``state_db`` and ``report_dir`` on a persistent volume. ``kwargs``: the run's
    options (:class:`~recordsync.integrations.outcome.SyncOptions`: ``dry_run``, ``profile``,
    ``base_url``, ``report_dir``, ``state_db``, ``full_refresh``, ``sandbox_seed``) by name,
    over ``options``; the others go to :func:`dagster.asset` (``group_name``, ``deps``,
    ``retry_policy``, ...)."""
    asset_kwargs = dict(kwargs)
    run_options = SyncOptions.take(asset_kwargs, options)
    key = dg.AssetKey([*key_prefix, name or asset_name(pipeline)])
    check = dg.AssetCheckSpec(
        ROWS_OK_CHECK,
        asset=key,
        description="every source row has a record of its own holding its values (exit 0)",
    )
    asset_kwargs.setdefault("kinds", {"recordsync"})
    asset_kwargs.setdefault("description", f"recordsync run {pipeline}")

    # a bare MaterializeResult: Dagster takes MaterializeResult[Any] for a tuple of outputs
    def _sync(context: dg.AssetExecutionContext) -> dg.MaterializeResult:  # type: ignore[type-arg,unused-ignore]
        outcome = run_sync(pipeline, run_options)
        meta = dagster_metadata(outcome)
        failure = outcome.failure(accept_rows_not_ok)
        if failure is not None:
            raise dg.Failure(failure, metadata=meta, allow_retries=outcome.retry_may_help())
        if outcome.rows_not_ok:
            context.log.warning(f"accepted (accept_rows_not_ok): {outcome.reason()}")
        context.log.info(f"recordsync report: {outcome.report_html}")
        rows_ok = dg.AssetCheckResult(
            passed=not outcome.rows_not_ok,
            check_name=ROWS_OK_CHECK,
            severity=dg.AssetCheckSeverity.WARN,
            description=outcome.reason() or None,
            metadata={"rows_not_ok": int(meta.get("rows_not_ok", 0))},
        )
        return dg.MaterializeResult(metadata=meta, check_results=[rows_ok])

    decorate = dg.asset(key=key, check_specs=[check], **asset_kwargs)
    return cast(Callable[[Callable[..., Any]], dg.AssetsDefinition], decorate)(_sync)

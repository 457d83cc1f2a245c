"""A pipeline file's steps made into :class:`recordsync.core.model.StepPlan` objects, and the
checks of its steps that come before the first request (sources readable, references to
earlier steps only, every step against the service's schema)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from recordsync.core.model import PreparedRow, StepPlan
from recordsync.prepare import check_source, prepare_step
from recordsync.prepare.digests import prepare_digested
from recordsync.prepare.fingerprint import step_fingerprint
from recordsync.read.estimate import estimate_rows
from recordsync.reconcile.field_errors import FieldSources
from recordsync.run.checks import check_step
from recordsync.validate.schema import Schema

PlanWrapper = Callable[[StepPlan], StepPlan]


def check_sources(pipeline: Any) -> None:
    for step in pipeline.steps:
        check_source(step.config, step.base_dir)


def build_plans(
    pipeline: Any,
    schema_json: list[dict[str, Any]] | None,
    users: list[dict[str, Any]] | None,
    wrap: PlanWrapper | None = None,
    steps: set[str] | None = None,
    slice_rows: int | None = None,
    check: bool = True,
    sample_cells: dict[str, int] | None = None,
) -> list[StepPlan]:
    """One StepPlan per pipeline step (only ``steps`` when given); rows made lazily, read
    batches prepared in slices of ``slice_rows`` (a sending run: ``tuning.sizes.SLICE_ROWS``).
    ``check=False``: the steps are not checked against the schema first (a run that stopped
    before it had one only reports its rows as not sent). ``sample_cells``: per step, the rows
    found unchanged whose cells are kept for the read-back (:mod:`recordsync.run.verify`)."""
    schema = Schema.from_api(schema_json) if schema_json is not None else None
    for step in pipeline.steps:  # every step is checked against the schema before any send
        if check and (steps is None or step.step_name in steps):
            problem = check_step(
                step, schema=schema, users=users, scan=False, read_through=False
            ).error
            if problem is not None:
                raise problem
    plans: list[StepPlan] = []
    common: dict[str, Any] = {"schema": schema, "users": users, "slice_rows": slice_rows}
    common["max_request_bytes"] = pipeline.send.max_request_bytes  # larger rows: invalid
    for step in pipeline.steps:
        if steps is not None and step.step_name not in steps:
            continue

        def rows(step: Any = step) -> Iterator[PreparedRow]:
            return prepare_step(step.config, base_dir=step.base_dir, **common)

        def rows_of(config: Any, step: Any = step) -> Iterator[PreparedRow]:
            return prepare_step(config, base_dir=step.base_dir, **common)

        def estimate(step: Any = step) -> int | None:
            return estimate_rows(step.config.source, step.base_dir)

        def digested(
            snapshot: Any, fp: bytes, owned: Any = None, marks: Any = None, step: Any = step
        ) -> Iterator[Any]:
            return prepare_digested(
                step.config,
                base_dir=step.base_dir,
                snapshot=snapshot,
                fp=fp,
                owned=owned,
                marks=marks,
                sample_cells=(sample_cells or {}).get(step.step_name, 0),
                **common,
            )

        def fingerprint(step: Any = step) -> bytes | None:
            return step_fingerprint(step.config, step.base_dir, schema_json, users)

        plan = StepPlan(
            step.step_name,
            step.mapping,
            step.config.object_type,
            rows,
            estimate,
            digested,
            fingerprint,
            rows_of=rows_of,
            duplicates_expected=step.config.duplicates_expected,
            merges_expected=step.config.merges == "expected",
            explain=FieldSources(step.config).explain,
        )
        plans.append(wrap(plan) if wrap is not None else plan)
    return plans

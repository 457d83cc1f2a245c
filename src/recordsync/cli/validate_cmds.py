"""``recordsync validate``: offline checks of a pipeline (configs, files, columns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from recordsync.config import load_pipeline
from recordsync.config.idempotency import idempotency_warnings
from recordsync.errors import ConfigError
from recordsync.validate.pipeline_check import check_pipeline
from recordsync.validate.schema import Schema


def _json_data(path: Path, what: str) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} JSON: {exc}", file=str(path)) from None
    return data.get("data", data) if isinstance(data, dict) else data


@click.command("validate")
@click.argument("pipeline", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--scan",
    is_flag=True,
    help="Also read every row and count valid / invalid / duplicate / merged rows.",
)
@click.option(
    "--schema",
    "schema_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Saved GET /api/meta/schema response to check fields and values against.",
)
@click.option(
    "--users",
    "users_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Saved GET /api/meta/users response, to resolve owners.",
)
def validate(pipeline: Path, scan: bool, schema_file: Path | None, users_file: Path | None) -> None:
    """Check PIPELINE offline: configs, source files, columns. Sends nothing.

    Exit code 2 when any step has a configuration error.
    """
    config = load_pipeline(pipeline)
    schema = Schema.from_api(_json_data(schema_file, "schema")) if schema_file else None
    users = _json_data(users_file, "users") if users_file else None
    reports = check_pipeline(config, schema=schema, users=users, scan=scan)
    for i, rep in enumerate(reports, start=1):
        mark = "ok" if rep.ok else "ERROR"
        click.echo(f"{i}. {rep.name} → {rep.object_type}  [{mark}]")
        click.echo(f"   mapping: {rep.mapping}")
        click.echo(f"   source:  {rep.source}" + (f" ({rep.columns} columns)" if rep.ok else ""))
        if rep.error is not None:
            click.echo(f"   error:   {rep.error}")
        if rep.counts:
            total = sum(rep.counts.values())
            parts = ", ".join(
                f"{rep.counts[k]} {k}"
                for k in ("valid", "invalid", "duplicate", "merged")
                if rep.counts[k]
            )
            click.echo(f"   rows:    {total} ({parts})")
            for p in rep.first_problems:
                click.echo(f"     - {p}")
            more = rep.problems - len(rep.first_problems)
            if more > 0:
                click.echo(
                    f"     … and {more} more (see `recordsync run --dry-run` for the full report)"
                )
    steps = ((s.step_name, s.config) for s in config.steps)
    for warning in idempotency_warnings(steps, state=True):  # as every run will say
        click.echo(f"warning: {warning}", err=True)
    bad = [r for r in reports if not r.ok]
    if bad:
        raise ConfigError(
            f"{len(bad)} of {len(reports)} step(s) have configuration errors: "
            + ", ".join(r.name for r in bad),
            hint="fix them; nothing was sent",
        )
    click.echo(
        f"pipeline {pipeline}: {len(reports)} step(s) ok"
        + ("" if schema else " (offline: no schema checks; use --schema)")
    )


COMMANDS: list[click.Command] = [validate]

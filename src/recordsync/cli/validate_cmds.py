"""``recordsync validate``: offline checks of a pipeline (configs, files, columns, and the
mappings against the schema known without the network: the embedded sandbox's seed, or a
saved schema).

A real target's schema is never cached: a copy from an earlier run can be out of date, and a
field added since would be reported unknown. For a real target, ``validate`` says what it
could not check and how to check it (a dry run, or a saved schema with ``--schema``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from recordsync.cli.options import sandbox_seed_option
from recordsync.config import load_pipeline
from recordsync.config.idempotency import idempotency_warnings
from recordsync.config.models import PipelineConfig
from recordsync.core.errors import ConfigError
from recordsync.run.checks import check_pipeline
from recordsync.validate.schema import Schema


def _json_data(path: Path, what: str) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} JSON: {exc}", file=str(path)) from None
    return data.get("data", data) if isinstance(data, dict) else data


RECORDS = "the records it already holds (refs to earlier steps' records; a ledger-only step's empty"
RECORDS += " ledger)"


@dataclass(frozen=True, slots=True)
class Known:
    """What the mappings are checked against, and what that leaves to the target."""

    schema: Schema | None
    users: list[dict[str, Any]] | None
    source: str
    """Where the schema comes from, for the output's ``target:`` line."""
    unchecked: list[str]
    """What only the target can tell."""


def _known(
    pipeline: Path,
    config: PipelineConfig,
    target: tuple[str | None, str | None, Path | None],
    files: tuple[Path | None, Path | None],
) -> Known:
    """The schema and users a run would fetch, where they are known offline: saved files
    (``--schema``/``--users``), else the embedded sandbox's seed when the run would use the
    embedded sandbox (the target chosen as ``run`` chooses it); a real target's are not."""
    schema_file, users_file = files
    if schema_file is not None:
        users = _json_data(users_file, "users") if users_file else None
        what = f"schema from {schema_file}" + (f", users from {users_file}" if users_file else "")
        owners = [] if users_file else ["owners against its users (--users)"]
        return Known(Schema.from_api(_json_data(schema_file, "schema")), users, what, owners)
    from recordsync.run.pipeline import RunRequest, profiles_path
    from recordsync.run.target import NO_TARGET, choose_target, redact_url

    base_url, profile, seed = target
    choice = choose_target(
        base_url=base_url,
        profile=profile,
        pipeline_target=config.target,
        profiles_path=profiles_path(RunRequest(pipeline)),
    )
    if choice.base_url is not None:
        what = f"{redact_url(choice.base_url)} (from {choice.origin}): its schema is not known"
        what += " offline"
        need = "object types, fields, select options and owners against its schema and users"
        return Known(None, None, what, [need + " (or pass --schema and --users)"])
    from recordsync.sandbox.catalog import Catalog
    from recordsync.sandbox.seed import load_seed

    catalog = Catalog(load_seed(seed))
    why = "no target configured" if choice.origin == NO_TARGET else f"from {choice.origin}"
    seeded = "its default seed" if seed is None else f"its seed {seed}"
    what = f"the embedded sandbox ({why}): mappings checked against {seeded}'s schema and users"
    seeded_users: list[dict[str, Any]] = catalog.users_answer["data"]
    return Known(Schema.from_api(catalog.schema_answer), seeded_users, what, [])


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
@click.option("--base-url", help="The target `run --base-url` would send to (not contacted).")
@click.option("--profile", help="The target profile `run --profile` would use (not contacted).")
@sandbox_seed_option
def validate(
    pipeline: Path,
    scan: bool,
    schema_file: Path | None,
    users_file: Path | None,
    base_url: str | None,
    profile: str | None,
    sandbox_seed: Path | None,
) -> None:
    """Check PIPELINE offline: configs, source files (encoding included), columns, and the
    mappings against the target's schema where it is known without the network (the embedded
    sandbox's seed, or --schema). Sends nothing.

    Exit code 2 when any step has a configuration error.
    """
    config = load_pipeline(pipeline)
    known = _known(pipeline, config, (base_url, profile, sandbox_seed), (schema_file, users_file))
    schema, users = known.schema, known.users
    click.echo(f"target: {known.source}")
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
    unchecked = "; ".join([*known.unchecked, RECORDS])
    flags = "".join(f" {f} {v}" for f, v in (("--base-url", base_url), ("--profile", profile)) if v)
    flags += f" --sandbox-seed {sandbox_seed}" if sandbox_seed else ""
    click.echo(
        f"needs the target (not checked offline): {unchecked}: `recordsync run {pipeline}"
        f"{flags} --dry-run` checks them and sends nothing"
    )
    bad = [r for r in reports if not r.ok]
    if bad:
        raise ConfigError(
            f"{len(bad)} of {len(reports)} step(s) have configuration errors: "
            + ", ".join(r.name for r in bad),
            hint="fix them; nothing was sent",
        )
    click.echo(f"pipeline {pipeline}: {len(reports)} step(s) ok")


COMMANDS: list[click.Command] = [validate]

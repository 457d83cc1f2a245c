"""``recordsync init SOURCE --type T`` (write a mapping) and ``import`` (init, dry run, run).

Both read the target's schema and users (the embedded sandbox unless a target is set) and
infer the mapping with :mod:`recordsync.infer`; the dry run then says what would happen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from recordsync.cli.options import sandbox_seed_option
from recordsync.core.errors import ConfigError, RunAborted

IMPORTS_DIR = Path(".recordsync/imports")
"""Where ``import`` keeps the mapping it infers while it runs (a copy goes into the report)."""


def target_options(f: Any) -> Any:
    f = sandbox_seed_option(f)
    f = click.option("--profile", help="Target profile from configs/profiles.yaml.")(f)
    return click.option("--base-url", help="Record service base URL (key: RECORDSYNC_API_KEY).")(f)


@contextmanager
def _target(
    source: Path, base_url: str | None, profile: str | None, seed: Path | None
) -> Iterator[Any]:
    from recordsync.cli.run_cmds import _announce
    from recordsync.run.pipeline import RunRequest, profiles_path
    from recordsync.run.target import choose_target, open_target, sandbox_db_for

    request = RunRequest(source, base_url=base_url, profile=profile)
    choice = choose_target(base_url=base_url, profile=profile, profiles_path=profiles_path(request))
    with open_target(choice, sandbox_db=sandbox_db_for(seed), seed=seed) as target:
        _announce(False)(target)
        yield target


def _schema_and_users(target: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from recordsync.send.client import RecordServiceClient, make_http_client

    with make_http_client(base_url=target.base_url) as http:
        client = RecordServiceClient(http, target.base_url, target.api_key)
        return client.schema(), client.users()


def infer_file(source: Path, object_type: str, target: Any, mapping_path: Path) -> tuple[str, Any]:
    """(mapping text, proposal) for ``source`` as ``object_type`` of the target's schema."""
    from recordsync.core.suggest import did_you_mean
    from recordsync.infer.engine import infer
    from recordsync.infer.render import render_mapping
    from recordsync.infer.sample import read_sample
    from recordsync.validate.schema import Schema

    schema_json, users = _schema_and_users(target)
    schema = Schema.from_api(schema_json)
    otype = schema.object_type(object_type)
    if otype is None:
        close = did_you_mean(object_type, schema.slugs)
        raise ConfigError(
            f"unknown object type '{object_type}'",
            key="--type",
            hint=(f"did you mean '{close}'? " if close else "")
            + f"object types of this target: {', '.join(schema.slugs)}",
        )
    raw = next((t for t in schema_json if t.get("slug") == otype.slug), {})
    displays = {
        str(f["field_name"]): str(f.get("display_name") or f["field_name"])
        for f in raw.get("fields") or []
        if "field_name" in f
    }
    sample = read_sample(source)
    prop = infer(sample.header, sample.values, otype, users, sample.shapes, displays, schema)
    return render_mapping(prop, sample, source, mapping_path), (prop, sample)


def _refuse_existing(path: Path | None, option: str, force: bool) -> None:
    """An existing file is never overwritten without ``--force``."""
    if path is not None and path.exists() and not force:
        raise ConfigError(
            f"{path} exists; nothing was written",
            key=option,
            hint=f"give another {option}, or --force to overwrite it",
        )


def _write(path: Path, text: str, option: str, force: bool) -> None:
    _refuse_existing(path, option, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _print_proposal(prop: Any, path: Path) -> None:
    name = prop.name or {}
    named = name.get("template", "").count("{") if "template" in name else len(name)
    mapped = len(prop.fields) + named + (prop.owner is not None) + (prop.ledger_key is not None)
    unmapped = len(prop.unmapped)
    click.echo(f"wrote {path}: {mapped} column(s) mapped, {unmapped} not mapped", err=True)
    for col, why in prop.unmapped:
        click.echo(f"  not mapped: {col!r}: {why}", err=True)
    if prop.null_values:
        tokens = ", ".join(repr(t) for t in prop.null_values)
        click.echo(f"read as blank in every column (source.null_values): {tokens}", err=True)
    for w in prop.warnings:
        click.echo(f"warning: {w}", err=True)
    if prop.missing_required:
        click.echo(
            f"required, not filled by any column: {', '.join(prop.missing_required)}"
            f" (edit {path})",
            err=True,
        )


def _dry_run(path: Path, target: Any, quiet: bool) -> Any:
    from recordsync.cli.run_cmds import _progress
    from recordsync.run.pipeline import RunRequest, run_pipeline

    progress, ctx = _progress(quiet)
    with ctx:
        return run_pipeline(RunRequest(path, dry_run=True), progress=progress, target=target)


def _point_summary_at(summary_path: Path, kept: Path) -> None:
    """``pipeline_file`` of the run's summary → the kept copy of the mapping, so that
    ``recordsync retry`` of this report uses it (the working copy is rewritten by the next
    import of a file of the same name)."""
    import json

    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["pipeline_file"] = str(kept.resolve())
    tmp = summary_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(summary_path)


def _confirm(question: str) -> bool:
    """The answer; no answer (end of input, Ctrl-C at the prompt) is a no."""
    try:
        return click.confirm(question, default=False, err=True)
    except click.exceptions.Abort:
        click.echo("", err=True)
        return False


@click.command("init")
@click.argument("source", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--type", "object_type", required=True, help="Object type: contacts, companies, ...")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Mapping file to write (default: SOURCE's name with .yaml, in the current directory).",
)
@click.option(
    "--pipeline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a one-step pipeline file naming the mapping.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@target_options
@click.option("--quiet", "-q", is_flag=True, help="No progress and no printed dry-run report.")
def init_command(
    source: Path,
    object_type: str,
    output: Path | None,
    pipeline: Path | None,
    force: bool,
    base_url: str | None,
    profile: str | None,
    sandbox_seed: Path | None,
    quiet: bool,
) -> None:
    """Write a mapping for SOURCE (CSV or Parquet) inferred from its header, its values and
    the target's schema and users, then dry-run it.

    Exit codes: those of the dry run (0: every row would be sent; 1: some rows are invalid;
    2: the mapping needs an edit, e.g. a required field no column fills).
    """
    from recordsync.cli.run_cmds import _finish

    path = output or Path(f"{source.name.split('.')[0]}.yaml")
    _refuse_existing(path, "--output", force)  # before anything is inferred
    _refuse_existing(pipeline, "--pipeline", force)
    with _target(source, base_url, profile, sandbox_seed) as target:
        text, (prop, _sample) = infer_file(source, object_type, target, path)
        _write(path, text, "--output", force)
        if pipeline is not None:
            from recordsync.infer.render import render_pipeline

            _write(pipeline, render_pipeline(path, pipeline), "--pipeline", force)
        _print_proposal(prop, path)
        result = _dry_run(path, target, quiet)
    click.echo(f"next: review {path}, then `recordsync run {path}`", err=True)
    _finish(result, quiet)


@click.command("import")
@click.argument("source", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--type", "object_type", required=True, help="Object type: contacts, companies, ...")
@click.option("--yes", "-y", is_flag=True, help="Send without asking (for scripts).")
@click.option(
    "--allow-unmapped",
    is_flag=True,
    help="Import even when a column that refers to other records (a company) cannot be"
    " filled: without it, --yes refuses and a prompt asks.",
)
@target_options
@click.option("--quiet", "-q", is_flag=True, help="No progress and no printed reports.")
def import_command(
    source: Path,
    object_type: str,
    yes: bool,
    allow_unmapped: bool,
    base_url: str | None,
    profile: str | None,
    sandbox_seed: Path | None,
    quiet: bool,
) -> None:
    """Import SOURCE in one go: infer a mapping (as init), dry-run it, ask, then run it.

    The mapping used is kept in the run's report directory, so that `recordsync run
    reports/<run_id>/<name>.yaml` repeats the same import. Every column left out is named.
    A column that refers to other records (a company's name, site or key) cannot be filled
    by a one-file import: it is asked about, and with --yes refused (exit 2) unless
    --allow-unmapped. Exit codes: those of `run` (3 when the answer is no: nothing was
    sent).
    """
    from recordsync.cli.run_cmds import _finish, _progress
    from recordsync.infer.render import render_mapping
    from recordsync.run.pipeline import RunRequest, run_pipeline

    stem = source.name.split(".")[0]
    work = IMPORTS_DIR / f"{stem}.yaml"
    with _target(source, base_url, profile, sandbox_seed) as target:
        text, (prop, sample) = infer_file(source, object_type, target, work)
        _write(work, text, "--output", True)
        _print_proposal(prop, work)
        _left_out_refs(prop, work, yes, allow_unmapped)
        dry = _dry_run(work, target, quiet)
        if not quiet:
            click.echo((dry.report_dir / "report.md").read_text(encoding="utf-8"))
        if dry.error is not None:
            raise dry.error
        t = dry.summary["totals"]
        would = t.get("rows_sent", 0) + t.get("rows_unchanged", 0)
        ask = f"Send {would} of {t.get('rows_read', 0)} rows to {target.name}?"
        if not yes and not _confirm(ask):
            raise RunAborted("import not confirmed: nothing was sent", hint="--yes skips asking")
        progress, ctx = _progress(quiet)
        with ctx:
            result = run_pipeline(RunRequest(work), progress=progress, target=target)
    kept = result.report_dir / work.name
    kept.write_text(render_mapping(prop, sample, source, kept), encoding="utf-8")
    _point_summary_at(result.report_dir / "summary.json", kept)
    click.echo(f"mapping kept: {kept} (repeat with `recordsync run {kept}`)", err=True)
    _finish(result, quiet)


def _left_out_refs(prop: Any, work: Path, yes: bool, allow: bool) -> None:
    """A reference column the import cannot fill: asked about, refused with --yes (exit 2)
    unless --allow-unmapped; nothing is sent before the answer."""
    refs = prop.refs  # a one-file mapping has no step to fill them from
    if not refs:
        return
    lines = [
        f"column {r.column!r} refers to {r.options['ref']['step']} ({r.field}), which a"
        " one-file import cannot fill"
        for r in refs
    ]
    fields = ", ".join(sorted({r.field for r in refs}))
    if allow:
        for line in lines:
            click.echo(f"warning: {line}: imported without it (--allow-unmapped)", err=True)
        return
    if yes:
        raise ConfigError(
            "; ".join(lines) + "; nothing was sent",
            key="--yes",
            hint=f"import the referenced records first and run both steps as one pipeline"
            f" (the reference is written, commented, in {work}), or pass --allow-unmapped"
            f" to import without {fields}",
        )
    for line in lines:
        click.echo(f"{line}.", err=True)
    if not _confirm(f"Import without {fields}?"):
        raise RunAborted(
            f"import not confirmed: {fields} cannot be filled; nothing was sent",
            hint=f"the reference is written, commented, in {work}; --allow-unmapped imports"
            " without it",
        )


COMMANDS: list[click.Command] = [init_command, import_command]

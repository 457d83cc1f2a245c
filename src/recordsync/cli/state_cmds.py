"""``recordsync state``: inspect and reset the nightly-sync state store."""

from __future__ import annotations

import json
from typing import Any

import click

from recordsync.cli.options import state_db_option
from recordsync.errors import RunAborted
from recordsync.state import Journal, StateStore
from recordsync.state.location import StateLocation, state_exists, state_location
from recordsync.state.names import state_name_of


def pipeline_name(arg: str) -> str:
    """A pipeline is named by its name, or by its pipeline file (its ``name:``, else the
    file's stem: ``pipelines/nightly.yaml`` → ``nightly``); the same rule as ``run``."""
    return state_name_of(arg)


@click.group()
def state() -> None:
    """Inspect or reset the state of nightly syncs (ledger, journal, lock)."""


def _lock_status(store: StateStore, name: str) -> str:
    lock = store.pipeline_lock(name)
    try:
        lock.acquire()
    except RunAborted as exc:
        return exc.message
    lock.release()
    return "not running"


@state.command()
@click.argument("pipeline")
@state_db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def show(pipeline: str, state_db: StateLocation | None, as_json: bool) -> None:
    """Show ledger counts per mapping, the last run and any incomplete run of PIPELINE."""
    name = pipeline_name(pipeline)
    path = state_location(state_db)
    if not state_exists(path):
        click.echo(f"no state database at {path} (no nightly sync has run here yet)")
        return
    with StateStore(path) as store:
        journal = Journal(store, name)
        last = journal.last_run()
        incomplete = journal.last_incomplete_run()
        pending = journal.pending_chunks()
        data: dict[str, Any] = {
            "pipeline": name,
            "state_db": str(path),
            "mappings": store.counts(name),
            "last_run": last._asdict() if last else None,
            "incomplete_run": incomplete._asdict() if incomplete else None,
            "pending_chunks": [
                {"run_id": c.run_id, "step": c.step, "chunk_no": c.chunk_no, "rows": len(c.rows)}
                for c in pending
            ],
            "lock": _lock_status(store, name),
        }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"pipeline {name}  (state {path})")
    if not data["mappings"]:
        click.echo("  no ledger entries")
    for mapping, counts in data["mappings"].items():
        total = sum(counts.values())
        detail = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
        click.echo(f"  mapping {mapping}: {total} keys ({detail})")
    if last:
        click.echo(
            f"  last run {last.run_id}: {last.state}, started {last.started_at},"
            f" finished {last.finished_at or '-'}, attempts {last.attempts}"
        )
    if incomplete:
        click.echo(
            f"  incomplete run {incomplete.run_id}: the next `recordsync run` resumes it"
            f" ({len(pending)} chunk(s) in flight)"
        )
    click.echo(f"  lock: {data['lock']}")


@state.command()
@click.argument("pipeline")
@state_db_option
@click.option("--mapping", "-m", default=None, help="Reset only this mapping's ledger.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def reset(
    pipeline: str, state_db: StateLocation | None, mapping: str | None, yes: bool
) -> None:
    """Forget the ledger of PIPELINE (or of one mapping): the next run sends every row and
    matches records by the mapping's own keys again. Refused while the pipeline runs."""
    name = pipeline_name(pipeline)
    path = state_location(state_db)
    if not state_exists(path):
        click.echo(f"no state database at {path}: nothing to reset")
        return
    what = f"mapping '{mapping}' of pipeline '{name}'" if mapping else f"pipeline '{name}'"
    with StateStore(path) as store, store.pipeline_lock(name):
        counts = store.counts(name)
        if mapping is not None and mapping not in counts:
            known = ", ".join(counts) or "none"
            raise click.BadParameter(
                f"pipeline '{name}' has no state for mapping '{mapping}' (known: {known})",
                param_hint="--mapping",
            )
        scope = {mapping: counts[mapping]} if mapping else counts
        n = sum(sum(c.values()) for c in scope.values())
        if not yes:
            click.confirm(
                f"Forget {n} ledger entries of {what} in {path}? The next run resends every row",
                abort=True,
            )
        removed = store.forget(name, mapping)
    click.echo(f"forgot {removed} ledger entries of {what}")


COMMANDS: list[click.Command] = [state]

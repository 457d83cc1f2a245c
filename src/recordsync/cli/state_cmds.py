"""``recordsync state``: inspect and reset the nightly-sync state store."""

from __future__ import annotations

import json
from typing import Any

import click

from recordsync.cli.options import state_db_option
from recordsync.core.errors import RunAborted
from recordsync.state import Journal, StateStore
from recordsync.state.location import StateLocation, state_location
from recordsync.state.names import state_name_of
from recordsync.state.store import state_exists
from recordsync.state.targets import keys_of, known_targets, normalize_url


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


def _target_data(store: StateStore, key: str, url: str | None, tid: int | None) -> dict[str, Any]:
    journal = Journal(store, key)
    last = journal.last_run()
    incomplete = journal.last_incomplete_run()
    pending = journal.pending_chunks()
    return {
        "target": url,
        "target_id": tid,
        "mappings": store.counts(key),
        "last_run": last._asdict() if last else None,
        "incomplete_run": incomplete._asdict() if incomplete else None,
        "pending_chunks": [
            {"run_id": c.run_id, "step": c.step, "chunk_no": c.chunk_no, "rows": len(c.rows)}
            for c in pending
        ],
    }


def _started(entry: dict[str, Any]) -> str:
    last = entry["last_run"] or entry["incomplete_run"]
    return str(last["started_at"]) if last else ""


def _targets(store: StateStore, name: str) -> list[dict[str, Any]]:
    """What the state holds for ``name``, per target (unbound state: target None), the
    target of the latest run first."""
    urls = {t.target_id: t.url for t in known_targets(store.connection, name)}
    out = [
        _target_data(store, key, urls.get(tid) if tid is not None else None, tid)
        for tid, key in keys_of(store.connection, name).items()
    ]
    return sorted(out, key=_started, reverse=True)


@state.command()
@click.argument("pipeline")
@state_db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def show(pipeline: str, state_db: StateLocation | None, as_json: bool) -> None:
    """Show, per target the state of PIPELINE knows: ledger counts per mapping, the last run
    and any incomplete run."""
    name = pipeline_name(pipeline)
    path = state_location(state_db)
    if not state_exists(path):
        click.echo(f"no state database at {path} (no nightly sync has run here yet)")
        return
    with StateStore(path) as store:
        targets = _targets(store, name)
        latest = targets[0] if targets else _target_data(store, name, None, None)
        data: dict[str, Any] = {
            "pipeline": name,
            "state_db": str(path),
            **{k: v for k, v in latest.items() if k not in ("target", "target_id")},
            "target": latest["target"],
            "targets": targets,
            "lock": _lock_status(store, name),
        }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"pipeline {name}  (state {path})")
    if not targets:
        click.echo("  no ledger entries")
    for entry in targets:
        where = entry["target"] or "an unrecorded target (state written before targets were"
        if entry["target"] is None:
            where += " recorded: see `recordsync run --adopt-state`)"
        click.echo(f"  target {where}")
        if not entry["mappings"]:
            click.echo("    no ledger entries")
        for mapping, counts in entry["mappings"].items():
            total = sum(counts.values())
            detail = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
            click.echo(f"    mapping {mapping}: {total} keys ({detail})")
        last, incomplete = entry["last_run"], entry["incomplete_run"]
        if last:
            click.echo(
                f"    last run {last['run_id']}: {last['state']}, started {last['started_at']},"
                f" finished {last['finished_at'] or '-'}, attempts {last['attempts']}"
            )
        if incomplete:
            click.echo(
                f"    incomplete run {incomplete['run_id']}: the next `recordsync run` into this"
                f" target resumes it ({len(entry['pending_chunks'])} chunk(s) in flight)"
            )
    click.echo(f"  lock: {data['lock']}")


@state.command()
@click.argument("pipeline")
@state_db_option
@click.option("--mapping", "-m", default=None, help="Reset only this mapping's ledger.")
@click.option(
    "--target",
    "target",
    default=None,
    help="Reset only the state of this target (its URL as `state show` lists it).",
)
@click.option(
    "--unbound", is_flag=True, help="Reset only state written before targets were recorded."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def reset(
    pipeline: str,
    state_db: StateLocation | None,
    mapping: str | None,
    target: str | None,
    unbound: bool,
    yes: bool,
) -> None:
    """Forget the ledger of PIPELINE (or of one mapping, or one target): the next run sends
    every row and matches records by the mapping's own keys again. Refused while the
    pipeline runs."""
    name = pipeline_name(pipeline)
    path = state_location(state_db)
    if not state_exists(path):
        click.echo(f"no state database at {path}: nothing to reset")
        return
    with StateStore(path) as store, store.pipeline_lock(name):
        keys = keys_of(store.connection, name)
        urls = {t.target_id: t.url for t in known_targets(store.connection, name)}
        if unbound:
            keys = {t: k for t, k in keys.items() if t is None}
        elif target is not None:
            wanted = normalize_url(target)
            keys = {t: k for t, k in keys.items() if t is not None and urls.get(t) == wanted}
            if not keys:
                known = ", ".join(sorted(set(urls.values()))) or "none"
                raise click.BadParameter(
                    f"pipeline '{name}' has no state for target {target} (known: {known})",
                    param_hint="--target",
                )
        counts = {key: store.counts(key) for key in keys.values()}
        if mapping is not None and not any(mapping in c for c in counts.values()):
            known = ", ".join(sorted({m for c in counts.values() for m in c})) or "none"
            raise click.BadParameter(
                f"pipeline '{name}' has no state for mapping '{mapping}' (known: {known})",
                param_hint="--mapping",
            )
        what = f"mapping '{mapping}' of pipeline '{name}'" if mapping else f"pipeline '{name}'"
        if unbound:
            what += " (unbound state)"
        elif target is not None:
            what += f" in {normalize_url(target)}"
        n = sum(
            sum(c.values())
            for per_key in counts.values()
            for m, c in per_key.items()
            if mapping is None or m == mapping
        )
        if not yes:
            click.confirm(
                f"Forget {n} ledger entries of {what} in {path}? The next run resends every row",
                abort=True,
            )
        removed = sum(store.forget(key, mapping) for key in keys.values())
    click.echo(f"forgot {removed} ledger entries of {what}")


COMMANDS: list[click.Command] = [state]

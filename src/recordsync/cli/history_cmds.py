"""``recordsync history``: the runs the state store keeps, and what they did to one key."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from recordsync.cli.options import state_db_option
from recordsync.state.history import KeyEvent, RunHistory
from recordsync.state.location import StateLocation, state_location
from recordsync.state.names import state_name_of
from recordsync.state.store import StateStore, state_exists

_AGO = re.compile(r"^\s*(\d+)\s*([dhm])\s*$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def since_value(text: str, now: datetime | None = None) -> str:
    """``--since``: ``7d``, ``12h``, ``30m`` ago, or a date or time (UTC unless it says);
    the ISO UTC time the history is compared with."""
    now = now or datetime.now(UTC)
    ago = _AGO.match(text)
    if ago is not None:
        moment = now - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
    else:
        try:
            moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise click.BadParameter(
                f"{text!r} is neither a date (2026-11-01), a time (2026-11-01T02:00:00Z) nor"
                " an age (7d, 12h, 30m)",
                param_hint="--since",
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _run_rows(records: list[Any], with_pipeline: bool) -> list[list[str]]:
    head = ["run", "started", "finished", "exit", "read", "created", "updated", "unchanged"]
    head += ["not ok", "deleted", "alerts", "target"]
    if with_pipeline:
        head.insert(0, "pipeline")
    rows = [head]
    for r in records:
        t = r.totals
        ids = [c["id"] for c in r.conditions]
        row = [
            r.run_id,
            r.started_at,
            r.finished_at or "-",
            str(r.exit_code),
            str(t.get("rows_read", 0)),
            str(t.get("created", 0)),
            str(t.get("updated", 0)),
            str(t.get("rows_unchanged", 0)),
            str(t.get("rows_not_ok", 0)),
            str(t.get("deleted", 0)),
            ",".join(ids) or "-",
            r.target or "-",
        ]
        if with_pipeline:
            row.insert(0, r.pipeline)
        rows.append(row)
    return rows


@click.command()
@click.argument("pipeline", required=False)
@state_db_option
@click.option("--since", default=None, help="Only runs started since: 7d, 12h, or a date.")
@click.option(
    "--key",
    "key",
    default=None,
    metavar="VALUE",
    help="The runs that created, updated, failed or deleted this source key (needs PIPELINE).",
)
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def history(
    pipeline: str | None,
    state_db: StateLocation | None,
    since: str | None,
    key: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The runs the state keeps (of PIPELINE, or of every pipeline), newest first: counts,
    exit code, the alert conditions each raised and its report. With --key: in which runs
    one source key was created, updated, failed or deleted, with its record id."""
    if key is not None and pipeline is None:
        raise click.UsageError("--key needs the PIPELINE whose key it is")
    path = state_location(state_db)
    name = state_name_of(pipeline) if pipeline is not None else None
    after = since_value(since) if since is not None else None
    if not state_exists(path):
        if as_json:
            click.echo("[]")
        else:
            click.echo(f"no state database at {path} (no nightly sync has run here yet)")
        return
    with StateStore(path) as store:
        runs = RunHistory(store)
        if key is not None:
            assert name is not None
            events = runs.key_events(name, key)
            events = [e for e in events if after is None or e.started_at >= after]
            if as_json:
                click.echo(json.dumps([_event(e) for e in events], indent=2, ensure_ascii=False))
                return
            if not events:
                click.echo(f"no kept run of {name} sent or deleted the key {key!r}")
                return
            rows = [["run", "started", "step", "key", "row", "status", "record id", "error"]]
            rows += [
                [
                    e.run_id or "-",
                    e.started_at,
                    e.step,
                    e.key,
                    "-" if e.source_row is None else str(e.source_row),
                    e.status,
                    "-" if e.record_id is None else str(e.record_id),
                    (e.error or "")[:80],
                ]
                for e in events
            ]
            click.echo(f"key {key!r} of pipeline {name}")
            for line in _table(rows):
                click.echo(line)
            return
        records = runs.runs(name, since=after, limit=limit)
    if as_json:
        click.echo(json.dumps([r.as_json() for r in records], indent=2, ensure_ascii=False))
        return
    if not records:
        what = f"of pipeline {name}" if name else "of any pipeline"
        click.echo(f"no run {what} in the history of {path}" + (f" since {after}" if after else ""))
        return
    for line in _table(_run_rows(records, with_pipeline=name is None)):
        click.echo(line)


def _event(e: KeyEvent) -> dict[str, Any]:
    return {
        "run_id": e.run_id,
        "started_at": e.started_at,
        "step": e.step,
        "key": e.key,
        "source_row": e.source_row,
        "status": e.status,
        "record_id": e.record_id,
        "error": e.error,
    }


COMMANDS: list[click.Command] = [history]

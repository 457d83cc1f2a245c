"""Click options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

from recordsync.state.location import STATE_PATH_ENV, PgUrl, is_pg_url


def _state_db(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> Path | PgUrl | None:
    """A state database: an SQLite file (a Path) or a ``postgresql://`` URL (a PgUrl, whose
    password never shows)."""
    if value is None:
        return None
    if is_pg_url(value):
        return PgUrl(value.strip())
    return click.Path(dir_okay=False, path_type=Path).convert(value, param, ctx)


state_db_option = click.option(
    "--state-db",
    envvar=STATE_PATH_ENV,
    default=None,
    callback=_state_db,
    help=f"State database: a file, or a postgresql:// URL [env {STATE_PATH_ENV};"
    " default .recordsync/state.db].",
)


sandbox_seed_option = click.option(
    "--sandbox-seed",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Seed file (object types, fields, users) of the embedded sandbox; its records go to"
    " .recordsync/sandbox-<seed name>.db.",
)


wait_for_lock_option = click.option(
    "--wait-for-lock",
    type=click.FloatRange(0),
    default=0,
    metavar="SECONDS",
    help="When another run holds this pipeline's lock, or writes the same records through the"
    " same key (same target, object type and ledger key or match rule), wait up to SECONDS for"
    " it to finish instead of refusing to start [default: 0, refuse].",
)

"""Click options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

from recordsync.state.store import STATE_PATH_ENV

state_db_option = click.option(
    "--state-db",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=STATE_PATH_ENV,
    default=None,
    help=f"State database [env {STATE_PATH_ENV}; default .recordsync/state.db].",
)

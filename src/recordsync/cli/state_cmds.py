"""``recordsync state``: inspect and reset the nightly-sync state store."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

"""``recordsync sandbox``: start the local record service (owned by the sandbox work)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

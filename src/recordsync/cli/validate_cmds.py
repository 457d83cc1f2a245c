"""``recordsync validate``: offline checks of a pipeline (configs, files, columns)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

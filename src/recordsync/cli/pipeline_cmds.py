"""``recordsync validate`` / ``run`` / ``retry`` / ``report`` (owned by the pipeline work)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

"""``recordsync run`` (and ``--dry-run``), ``retry`` and ``report``."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

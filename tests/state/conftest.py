"""Fixtures for the state package: a fresh state database and prepared rows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.state import StateStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    with StateStore(tmp_path / ".recordsync" / "state.db") as s:
        yield s


def prepared(
    source_row: int,
    key: str | None,
    fields: dict[str, Any] | None = None,
    *,
    status: RowStatus = RowStatus.VALID,
    name: str | None = None,
) -> PreparedRow:
    payload = {
        "name": name or f"Row {source_row}",
        "match_by": "email",
        "match_value": key,
        "fields": {"email": key, **(fields or {})},
    }
    return PreparedRow(
        source=SourceRow("contacts.csv", source_row, {"email": key}),
        status=status,
        payload=payload if status is RowStatus.VALID else None,
        match_by="email",
        match_value=key,
        key=key,
    )


def start_child(code: str) -> subprocess.Popen[str]:
    """Run ``code`` in a fresh Python; the caller waits for its ``READY`` line."""
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"child did not get ready: {line!r} {err}")
    return line.strip()


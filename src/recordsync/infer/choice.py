"""One line of an inferred mapping: a field (or a reference, the owner) from a column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Choice:
    """One mapped line: ``field`` ← ``column`` with ``options``, and why."""

    field: str
    column: str
    options: dict[str, Any]
    evidence: str
    confidence: str  # high | medium | low

"""A service validation error on an entry, told as the source row's problem.

The service names the field and the rule (``Validation failed: phone: invalid phone number``);
the row's error also names the source column(s) that fed that field, their cells, and the
value sent, and says what to do: the value is wrong, so resending it fails the same way.
"""

from __future__ import annotations

import re
from typing import Any

from recordsync.config.models import FieldSpec, MappingConfig
from recordsync.core.model import PreparedRow

VALIDATION = re.compile(r"Validation failed: (?P<field>[^:\s]+): (?P<reason>.+)", re.DOTALL)
FIX = (
    "rejected by the service: fix the value in the source or the mapping; "
    "a retry without a fix fails the same way"
)
"""The next step for a rejected value (a retry resends the same value)."""
SHOWN_MAX = 80
"""Longest cell or value quoted in full; longer ones are cut."""


def is_rejected_value(error: str) -> bool:
    """True when the error is a service validation error (retrying cannot help)."""
    return VALIDATION.match(error) is not None or error.endswith(f"({FIX})")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"


class FieldSources:
    """Which source columns feed each field of one mapping."""

    def __init__(self, mapping: MappingConfig) -> None:
        specs: dict[str, FieldSpec] = {"name": mapping.name, **mapping.fields}
        if mapping.profile_image_url is not None:
            specs["profile_image_url"] = mapping.profile_image_url
        self.columns = {field: spec.columns for field, spec in specs.items()}
        self.constant = {field for field, spec in specs.items() if not spec.columns}
        if mapping.owner is not None:
            self.columns["owned_by_user_id"] = [mapping.owner.column]

    def explain(self, row: PreparedRow, error: str) -> str:
        """``error`` with the columns, cells and value sent of the field it names (unchanged
        when it is not a validation error of a mapped field)."""
        m = VALIDATION.match(error)
        if m is None:
            return error
        field, reason = m["field"], m["reason"]
        columns = self.columns.get(field)
        if columns is None:
            return error
        sent = _sent(row, field)
        cells = row.source.values
        parts = [f"column '{c}' value {_shown(cells.get(c))}" for c in columns]
        if not parts:
            parts = ["a constant value" if field in self.constant else "no source column"]
        shown_cells = [cells.get(c) for c in columns]
        same = len(columns) == 1 and shown_cells[0] == sent
        where = ", ".join(parts) + ("" if same or sent is _MISSING else f" (sent {_shown(sent)})")
        return f"{where} → {field}: {reason} ({FIX})"


_MISSING = object()


def _sent(row: PreparedRow, field: str) -> Any:
    payload = row.payload or {}
    if field in ("name", "profile_image_url"):
        return payload.get(field, _MISSING)
    fields = payload.get("fields")
    return fields.get(field, _MISSING) if isinstance(fields, dict) else _MISSING

"""Whether a record read back from the service holds what a batch entry writes.

Used where a row's outcome is decided by reading the service instead of by its answer:
settling a lost answer (:mod:`recordsync.send.settle`), and matching new rows to records
a state does not remember (:mod:`recordsync.nightly.target_check`). The service may store a
value in another form than it was sent, so values compare as the service normalises them:

    numbers         equal as floats (``1`` holds ``1.0``); a boolean is never a number
    text            equal after trimming and case folding; two timestamps at the same instant
    lists           element by element, in order
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from recordsync.core.model import BatchInput


def holds(record: dict[str, Any], entry: BatchInput) -> bool:
    """True when ``record`` reads back with every value ``entry`` writes."""
    fields = entry.get("fields")
    wanted = dict(fields) if isinstance(fields, dict) else {}
    for key in ("name", "profile_image_url"):
        if key in entry:
            wanted[key] = entry[key]
    return all(same(value, record.get(key)) for key, value in wanted.items())


def same(sent: Any, stored: Any) -> bool:
    """Whether a value the service stored (``stored``) is the one sent (``sent``)."""
    if sent == stored and type(sent) is type(stored):
        return True
    if isinstance(sent, bool) or isinstance(stored, bool):
        return False
    if isinstance(sent, int | float) and isinstance(stored, int | float):
        return float(sent) == float(stored)
    if isinstance(sent, str) and isinstance(stored, str):
        if sent.strip().casefold() == stored.strip().casefold():
            return True
        a, b = instant(sent), instant(stored)
        return a is not None and a == b
    if isinstance(sent, list) and isinstance(stored, list):
        return len(sent) == len(stored) and all(map(same, sent, stored))
    return False


def instant(value: Any) -> float | None:
    """An ISO 8601 timestamp (``Z`` or an offset) as epoch seconds; None if unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None

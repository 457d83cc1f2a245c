"""How a query source decides what changed: ``change_detection: database`` (the row digests
compared inside the database) and ``incremental`` (only rows past a cursor's watermark); the
checks of both against the rest of the mapping (docs/mapping.md, "Large tables")."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w)?\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def seconds(value: Any, what: str) -> int:
    """A duration (``15m``, ``2h``, ``7d``, ``1w``, ``90s``, or a number of seconds) in
    seconds; ValueError naming ``what`` otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: a duration such as 15m, 2h or 7d, not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what}: a duration cannot be negative ({value})")
        return value
    found = _DURATION.match(str(value)) if isinstance(value, str) else None
    if found is None:
        raise ValueError(
            f"{what}: {value!r} is not a duration; write a number and a unit: s, m, h, d or w"
            " (15m, 2h, 7d)"
        )
    return int(found.group(1)) * _UNIT[found.group(2) or "s"]


class Incremental(BaseModel):
    """``incremental: {cursor: updated_at, lookback: 15m, full_check_every: 7d}``: a query
    source read from its cursor's last acknowledged watermark (less ``lookback``, for rows
    committed late), and read whole every ``full_check_every`` (when mirror deletes run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # as every config model

    cursor: str = Field(min_length=1)
    """The column that grows with every change of a row (a timestamp, a date or a number)."""
    lookback: int = 900
    """Seconds (or cursor units, for a numeric cursor) read again before the watermark."""
    full_check_every: int = 604_800
    """Seconds between two full reads of the source."""

    @field_validator("lookback", mode="before")
    @classmethod
    def _lookback(cls, v: Any) -> int:
        return seconds(v, "incremental.lookback")

    @field_validator("full_check_every", mode="before")
    @classmethod
    def _every(cls, v: Any) -> int:
        got = seconds(v, "incremental.full_check_every")
        if got <= 0:
            raise ValueError("incremental.full_check_every must be longer than 0 (e.g. 7d)")
        return got


def check_change_detection(src: Any) -> None:
    """ValueError when a source's ``change_detection`` / ``incremental`` options do not fit
    its kind (called from the source's own checks: a query source only)."""
    pushed = src.change_detection == "database"
    if src.query is None:
        given = [k for k in ("incremental",) if getattr(src, k) is not None]
        if pushed:
            given.insert(0, "change_detection: database")
        if given:
            raise ValueError(f"{', '.join(given)}: only for a 'query' source")
        return
    if not SCHEMA_NAME.fullmatch(src.state_schema):
        raise ValueError(
            f"state_schema {src.state_schema!r}: a schema name in lower case (letters, digits,"
            " underscores; at most 63), e.g. recordsync"
        )
    if not pushed:
        return
    if src.incremental is not None:
        raise ValueError(
            "give change_detection: database or incremental, not both (database: every row"
            " compared in the database; incremental: only rows past the cursor read)"
        )
    if not src.key or len(src.key) != 1:
        raise ValueError(
            "change_detection: database needs a one-column 'key' (the row's key in the"
            " database's table of synced rows)"
        )


def check_mapping_detection(mapping: Any) -> None:
    """ValueError when the mapping cannot use its source's ``change_detection: database``:
    the ledger key must be the source's key as it is, and no field may be a reference."""
    src = mapping.source
    if src.change_detection != "database":
        return
    lk = mapping.ledger_key
    if lk is None or lk.column != src.key[0] or lk.normalize != "none":
        raise ValueError(
            "source.change_detection: database keeps each row under the source's key: leave"
            " ledger_key out (it is then the key column), or make it"
            f" {{column: {src.key[0]}}} without normalize"
        )
    if any(spec.ref is not None for spec in mapping.fields.values()):
        raise ValueError(
            "source.change_detection: database cannot be used with 'ref' fields (their values come"
            " from another step's ledger, not from the database): leave it out"
        )

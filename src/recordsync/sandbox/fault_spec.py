"""One parsed fault of the sandbox (:mod:`recordsync.sandbox.faults` parses the specs,
:mod:`recordsync.sandbox.fault_replies` answers them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One parsed fault: what happens (``kind``) to which requests (path, every, after)."""

    kind: str
    text: str
    status: int | None = None
    delay_s: float = 0.0
    every: int = 1
    after: int = 0
    path: str | None = None
    retry_after: str | None = None
    method: str | None = None
    date_offset_s: float | None = None
    """``skew``: the ``Date`` header's offset from the sandbox's clock (None: not moved)."""
    stamp_offset_s: float = 0.0
    """``skew``: the offset of the clock that stamps ``created_at`` / ``updated_at``."""

    def __str__(self) -> str:
        return self.text

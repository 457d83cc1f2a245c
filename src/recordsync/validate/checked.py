"""The result of checking one column: values to send, and why values are invalid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(slots=True)
class Checked:
    """Per row: the JSON value to send (None when blank or invalid), the reason a value is
    invalid and a suggestion for the config (None lists when no row has one)."""

    values: list[Any]
    reasons: list[str | None] | None = None
    hints: list[dict[str, Any] | None] | None = None


def bad_mask(arr: pa.Array, ok: pa.Array) -> npt.NDArray[np.bool_]:
    """Rows where ``arr`` has a value and ``ok`` is not true."""
    bad = pc.and_(pc.is_valid(arr), pc.invert(pc.fill_null(ok, False)))
    return bad.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def reasons_at(mask: npt.NDArray[np.bool_], reason: str) -> list[str | None] | None:
    """``reason`` where ``mask`` is true, else None; None instead of a list of Nones."""
    if not mask.any():
        return None
    out = np.full(len(mask), None, dtype=object)
    out[mask] = reason
    reasons: list[str | None] = out.tolist()
    return reasons


def bad_where(arr: pa.Array, ok: pa.Array, reason: str) -> list[str | None] | None:
    """``reason`` where ``arr`` has a value and ``ok`` is not true (None: no such row)."""
    return reasons_at(bad_mask(arr, ok), reason)

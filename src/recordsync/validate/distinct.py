"""Run a Python function once per distinct value of a column, then spread the results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.tuning import sizes

Outcome = tuple[Any, str | None, dict[str, Any] | None]
"""(value, reason it is invalid or None, suggestion or None)."""

NULL_OUTCOME: Outcome = (None, None, None)
Memo = dict[Any, Outcome]


def distinct_outcomes(
    arr: pa.Array | pa.ChunkedArray, fn: Callable[[Any], Outcome], memo: Memo | None = None
) -> tuple[npt.NDArray[np.intp], list[Outcome]]:
    """``fn`` of each distinct non-null value, and per row the index of its outcome.

    The last outcome is :data:`NULL_OUTCOME`, the one of null rows. ``memo`` keeps outcomes
    from batch to batch (``fn`` must then always be the same function of the value)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    if memo is None:
        outcomes = [fn(v) for v in enc.dictionary.to_pylist()]
    else:
        outcomes = []
        for v in enc.dictionary.to_pylist():
            o = memo.get(v)
            if o is None:
                o = fn(v)
                if len(memo) < sizes.VALUE_MEMO_MAX:
                    memo[v] = o
            outcomes.append(o)
    outcomes.append(NULL_OUTCOME)
    idx = pc.fill_null(enc.indices, len(outcomes) - 1).to_numpy(zero_copy_only=False)
    return idx, outcomes


def boxed(items: list[Any]) -> npt.NDArray[np.object_]:
    """A 1-D object array holding ``items`` as they are (tuples and lists stay items)."""
    out = np.empty(len(items), dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


def map_distinct(
    arr: pa.Array | pa.ChunkedArray, fn: Callable[[Any], Outcome], memo: Memo | None = None
) -> tuple[list[Any], list[str | None] | None, list[dict[str, Any] | None] | None]:
    """Apply ``fn`` to each distinct non-null value of ``arr``; nulls give (None, None, None).

    Reasons and hints are None (not lists) when no value has one. See distinct_outcomes."""
    idx, outcomes = distinct_outcomes(arr, fn, memo)
    values = boxed([o[0] for o in outcomes])
    any_reason = any(o[1] is not None for o in outcomes)
    any_hint = any(o[2] is not None for o in outcomes)
    return (
        values[idx].tolist(),
        boxed([o[1] for o in outcomes])[idx].tolist() if any_reason else None,
        boxed([o[2] for o in outcomes])[idx].tolist() if any_hint else None,
    )


def pylist(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    """``arr.to_pylist()``; for string columns whose values repeat a lot (judged on the first
    1024 values), one shared ``str`` per distinct value instead of one per row: fewer objects
    to allocate and free, and less memory."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if repetitive(arr):
        enc = pc.dictionary_encode(arr)
        return spread(enc.dictionary.to_pylist(), enc.indices)
    out: list[Any] = arr.to_pylist()
    return out


def repetitive(arr: pa.Array) -> bool:
    """A string array of 256 values or more whose first 1024 hold at most a quarter as many
    distinct values."""
    if len(arr) < 256 or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return False
    sample = arr.slice(0, 1024)
    return bool(pc.count_distinct(sample, mode="all").as_py() <= len(sample) // 4)


def spread(per_value: list[Any], indices: pa.Array) -> list[Any]:
    """Per row, the item of ``per_value`` its (dictionary) index points to; None for a null
    index. One shared object per distinct value."""
    values = boxed([*per_value, None])
    idx = pc.fill_null(indices, len(values) - 1).to_numpy(zero_copy_only=False)
    return values[idx].tolist()  # type: ignore[no-any-return]

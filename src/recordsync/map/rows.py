"""Build one batch input dict per row from column lists, fast.

``[dict(zip(keys, cells)) for cells in zip(*columns)]`` grows every dict one key at a time
and goes through a tuple and a zip per row. A dict display (``{k0: v0, k1: v1, ...}``) in a
comprehension that unpacks the columns directly is about twice as fast, so one such
comprehension is compiled per distinct tuple of keys and cached.

Only generated identifiers appear in the compiled source: the keys (column and field names
from user files) are passed in as values of the function's namespace, never as text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

RowDicts = Callable[..., list[dict[str, Any]]]


@lru_cache(maxsize=64)
def _compiled_payloads(keys: tuple[str, ...]) -> RowDicts:
    n = len(keys)
    cols = "".join(f", c{i}" for i in range(n))
    cells = "".join(f", v{i}" for i in range(n))
    fields = ", ".join(f"k{i}: v{i}" for i in range(n))
    src = (
        f"lambda names, bys, values{cols}: "
        f'[{{"name": nm, "match_by": by, "match_value": mv, "fields": {{{fields}}}}} '
        f"for nm, by, mv{cells} in zip(names, bys, values{cols})]"
    )
    namespace: dict[str, Any] = {f"k{i}": key for i, key in enumerate(keys)}
    fn: RowDicts = eval(src, namespace)  # generated identifiers only (see above)
    return fn


def payload_dicts(
    names: list[Any],
    match_by: list[str | None],
    match_values: list[Any],
    keys: Sequence[str],
    columns: Sequence[list[Any]],
) -> list[dict[str, Any]]:
    """One batch input per row: ``{"name", "match_by", "match_value", "fields"}``, with
    ``fields`` ``{keys[0]: columns[0][i], keys[1]: columns[1][i], ...}`` (with duplicated
    keys the last column wins, as with ``dict(zip(...))``); rows without a match rule get
    ``{"name", "fields"}`` only."""
    n = len(names)
    if len(keys) != len(columns):
        raise ValueError(f"{len(keys)} keys but {len(columns)} columns")
    for col in (match_by, match_values, *columns):
        if len(col) != n:
            raise ValueError(f"column of {len(col)} items, expected {n}")
    out: list[dict[str, Any]] = _compiled_payloads(tuple(keys))(
        names, match_by, match_values, *columns
    )
    if None in match_by:
        for i, by in enumerate(match_by):
            if by is None:
                p = out[i]
                out[i] = {"name": p["name"], "fields": p["fields"]}
    return out

"""Build one batch input dict per row from column lists, fast; a batch's mapped columns
(:class:`MappedColumns`) made into the batch inputs of any range of its rows.

``[dict(zip(keys, cells)) for cells in zip(*columns)]`` grows every dict one key at a time
and goes through a tuple and a zip per row. A dict display (``{k0: v0, k1: v1, ...}``) in a
comprehension that unpacks the columns directly is about twice as fast, so one such
comprehension is compiled per distinct tuple of keys and cached.

Only generated identifiers appear in the compiled source: the keys (column and field names
from user files) are passed in as values of the function's namespace, never as text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from recordsync.map.columns import Column, MappedBatch

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


@dataclass(slots=True)
class MappedColumns:
    """A batch mapped column by column (values checked, errors and match keys found), its
    batch inputs not built yet: :meth:`rows` builds those of any range of its rows. A run
    that sends maps a read batch once and builds its rows a slice at a time: the column
    work (Arrow calls with a fixed cost each) is not repeated per slice."""

    names: list[Any]
    fields: list[Column]
    """The columns under ``fields`` (the owner's last), in the mapping's order."""
    image: Column | None
    """``profile_image_url``, when mapped."""
    errors: list[str | None]
    hints: dict[int, dict[str, Any]]
    keys: list[str | None]
    match_by: list[str | None]
    match_value: list[Any]
    owners: list[str | None]

    def __len__(self) -> int:
        return len(self.errors)

    def rows(self, start: int = 0, stop: int | None = None) -> MappedBatch:
        """The batch inputs and per-row outputs of rows ``start`` to ``stop`` (default: all),
        indexed from 0 (``hints`` too); absent fields left out of each input."""
        n = len(self.errors)
        stop = n if stop is None else min(stop, n)
        if not 0 <= start <= stop:
            raise ValueError(f"rows {start} to {stop} of a batch of {n}")
        whole = start == 0 and stop == n

        def cut(items: list[Any]) -> list[Any]:
            return items if whole else items[start:stop]

        fields = self.fields
        payloads = payload_dicts(
            cut(self.names),
            cut(self.match_by),
            cut(self.match_value),
            [c.key for c in fields],
            [cut(c.values) for c in fields],
        )
        inputs: list[dict[str, Any]] | None = None  # each payload's fields
        for c in fields:
            present = c.present[start:stop]
            if not present.all():
                if inputs is None:
                    inputs = list(map(itemgetter("fields"), payloads))
                # deleted in one loop in C: ``del inputs[i][c.key]`` for each absent row
                absent = map(inputs.__getitem__, np.flatnonzero(~present).tolist())
                deque(map(dict.__delitem__, absent, repeat(c.key)), maxlen=0)
        image = self.image
        if image is not None:
            values = image.values
            for i in np.flatnonzero(image.present[start:stop]).tolist():
                payloads[i]["profile_image_url"] = values[start + i]
        hints = (
            self.hints
            if whole
            else {i - start: h for i, h in self.hints.items() if start <= i < stop}
        )
        return MappedBatch(
            payloads,
            cut(self.errors),
            hints,
            cut(self.keys),
            cut(self.match_by),
            cut(self.match_value),
            cut(self.owners),
        )

"""What mapping one batch produces: per-field columns of row values, the match keys, and
the batch result."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import add
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import FieldSpec
from recordsync.read.batch import may_contain


@dataclass(slots=True)
class Column:
    """One output value per row: value, whether the key is sent, and why it is invalid."""

    key: str
    label: str
    values: list[Any]
    present: npt.NDArray[np.bool_]
    reasons: list[str | None] | None
    hints: list[dict[str, Any] | None] | None
    shown: list[Any] | pa.Array | None = None
    """Per row, the cell an error quotes: a list, or the Arrow array holding them (only the
    cells of failing rows are ever made Python values)."""

    def put_first(self, reasons: list[str | None] | None, cells: pa.Array) -> Column:
        """Rows with a ``reasons`` entry get that reason (quoting their cell) instead of any
        later one: a ``transform`` that found nothing comes before the type check."""
        if reasons is None:
            return self
        shown = cells.to_pylist()
        mine = self.reasons if self.reasons is not None else [None] * len(reasons)
        mine_shown = (
            [None] * len(reasons)
            if self.shown is None
            else self.shown.to_pylist()
            if isinstance(self.shown, pa.Array)
            else self.shown
        )
        self.reasons = [r if r is not None else m for r, m in zip(reasons, mine, strict=True)]
        self.shown = [
            s if r is not None else m for r, s, m in zip(reasons, shown, mine_shown, strict=True)
        ]
        self.hints = (
            [None if r is not None else h for r, h in zip(reasons, self.hints, strict=True)]
            if self.hints is not None
            else None
        )
        return self

    def error(self, i: int) -> str | None:
        if self.reasons is None or self.reasons[i] is None:
            return None
        shown = self.shown[i] if self.shown is not None else None
        if isinstance(shown, pa.Scalar):
            shown = shown.as_py()
        if shown is None:
            return f"{self.label}: {self.reasons[i]}"
        return f"{self.label}: {shown!r} {self.reasons[i]}"


@dataclass(slots=True)
class MappedBatch:
    """Per-row outputs of one batch (lists of equal length)."""

    payloads: list[dict[str, Any]]
    errors: list[str | None]
    hints: dict[int, dict[str, Any]]
    keys: list[str | None]
    match_by: list[str | None]
    match_value: list[Any]
    owners: list[str | None] = field(default_factory=list)


def label_of(key: str, spec: FieldSpec) -> str:
    target = "name" if key == "name" else f"field '{key}'"
    if spec.column is not None:
        return f"column '{spec.column}' → {target}"
    if spec.template is not None:
        return f"template '{spec.template}' → {target}"
    return f"value → {target}"


def match_keys(
    n: int, rules: list[tuple[str, list[Any]]]
) -> tuple[list[str | None], list[str | None], list[Any]]:
    """First rule with a value wins: key ``by:value``, match_by, match_value per row."""
    keys: list[str | None] = [None] * n
    bys: list[str | None] = [None] * n
    vals: list[Any] = [None] * n
    holes: list[int] | None = None  # rows without a key yet (None: all of them)
    for by, values in rules:  # None and "" are no value (ids are never 0)
        if holes is None:
            if all(values):  # every row has a value: the common case, with calls in C
                try:  # text values (e-mails, names) need no str() each
                    keys = list(map(add, repeat(f"{by}:"), values))
                except TypeError:  # a non-text value (a record id)
                    keys = list(map(add, repeat(f"{by}:"), map(str, values)))
                return keys, [by] * n, list(values)
            keys = [f"{by}:{v}" if v else None for v in values]
            holes = [i for i, k in enumerate(keys) if k is None]
            bys = [by if v else None for v in values]
            vals = [v if v else None for v in values]
            continue
        for i in holes:
            v = values[i]
            if v:
                keys[i], bys[i], vals[i] = f"{by}:{v}", by, v
        holes = [i for i in holes if keys[i] is None]
        if not holes:
            break
    return keys, bys, vals


def nul_errors(batch: pa.RecordBatch, columns: list[str]) -> list[str | None]:
    """Per row, the first of ``columns`` whose cell holds a NUL character (the service
    rejects it, failing the whole batch), as an error; None for the other rows."""
    errors: list[str | None] = [None] * batch.num_rows
    for colname in columns:
        col = batch.column(colname)
        if pa.types.is_string(col.type) and may_contain(col, "\x00"):
            hits = pc.fill_null(pc.match_substring(col, "\x00"), False)
            for i in np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist():
                errors[i] = errors[i] or (
                    f"column '{colname}': contains a NUL character, which the service "
                    "rejects (it would fail the whole batch)"
                )
    return errors

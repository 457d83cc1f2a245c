"""Whether a stream of rows comes in key order, as DuckDB's ``ORDER BY <key>`` would give it.

A query source whose rows already come out of DuckDB in key order (a Parquet file written
from an ordered query, a table read in primary-key order) is read without ``ORDER BY``
(:mod:`.sql`): the sort is the largest memory of the read. :class:`KeyOrder` checks a
stream of record batches against that order: ascending, NULLs last, one key column after
the other (the next column orders rows whose earlier columns are equal). Rows with equal keys
may come in any order. Only key types whose order Arrow compares exactly as DuckDB does are
checked (:data:`EXACT_TYPES`); any other keeps the sort.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EXACT_TYPES = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "VARCHAR",
        "DATE",
        "TIMESTAMP",
    }
)
"""DuckDB key types Arrow orders exactly as DuckDB's ``ORDER BY`` does: integers, booleans,
dates, timestamps without time zone, and text compared byte by byte (a key column with a
collation is found by :func:`binary_collation_probe` and keeps the sort). Floating point
(NaN, -0.0), decimals, time zones and nested types keep the sort."""


def binary_collation_probe(quoted: str) -> str:
    """SQL that is true when the text column ``quoted`` (``q."name"``) compares byte by byte
    (no collation: case, accents, Unicode normalisation and language rules all differ from
    bytes on one of these pairs). Its value never matters: the CASE takes the column's type,
    collation included."""
    def v(text: str) -> str:
        return f"(CASE WHEN false THEN {quoted} ELSE '{text}' END)"

    e_acute, e_combining = "\u00e9", "e\u0301"
    return (
        f"{v('B')} < {v('a')} AND {v('a')} <> {v('A')} AND {v('e')} <> {v(e_acute)}"
        f" AND {v(e_acute)} <> {v(e_combining)} AND {v('10')} < {v('9')}"
    )


def _compare(prev: pa.Array, nxt: pa.Array) -> np.ndarray:
    """Per pair: -1 when ``nxt`` sorts before ``prev`` (ascending, NULLs last), 1 after, 0
    equal (two NULLs are equal)."""
    lt = pc.less(nxt, prev).fill_null(False).to_numpy(zero_copy_only=False)
    gt = pc.greater(nxt, prev).fill_null(False).to_numpy(zero_copy_only=False)
    pn = pc.is_null(prev).to_numpy(zero_copy_only=False)
    nn = pc.is_null(nxt).to_numpy(zero_copy_only=False)
    out = np.where(lt, -1, np.where(gt, 1, 0)).astype(np.int8)
    out[pn & ~nn] = -1  # a value after a NULL: NULLs sort last
    out[~pn & nn] = 1
    return out


class KeyOrder:
    """Checks the batches of one stream, in turn, for rows going back in key order."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)
        self.rows = 0
        """Rows checked so far."""
        self._last: list[pa.Array] | None = None

    def first_break(self, batch: pa.RecordBatch) -> int | None:
        """The stream's row number (1-based) of the first row of ``batch`` whose key sorts
        before the row just before it, or None when the batch keeps the order."""
        n = batch.num_rows
        if n == 0:
            return None
        cols = [batch.column(batch.schema.get_field_index(k)) for k in self.keys]
        if isinstance(cols[0], pa.ChunkedArray):  # pragma: no cover - record batches hold arrays
            cols = [c.combine_chunks() for c in cols]
        base = self.rows  # stream row number of the row before cols[...][0]
        if self._last is not None:
            cols = [pa.concat_arrays([last, c]) for last, c in zip(self._last, cols, strict=True)]
            base -= 1
        self._last = [c.slice(len(c) - 1) for c in cols]
        self.rows += n
        m = len(cols[0])
        if m < 2:
            return None
        state = np.zeros(m - 1, dtype=np.int8)
        for col in cols:
            cmp = _compare(col.slice(0, m - 1), col.slice(1))
            state = np.where(state == 0, cmp, state)
        bad = np.flatnonzero(state < 0)
        if len(bad) == 0:
            return None
        return base + int(bad[0]) + 2

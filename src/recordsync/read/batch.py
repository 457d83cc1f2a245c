"""What the readers yield: record batches of source rows with their line numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa


@dataclass(slots=True)
class BadLine:
    """A line that could not be read as a row (wrong number of cells, bad quoting)."""

    line: int
    text: str
    message: str


@dataclass(slots=True)
class SourceBatch:
    """Rows read from one file: ``rows[i]`` is the 1-based line (CSV) or row (Parquet) number
    of ``batch`` row ``i``; ``bad`` are malformed lines that fall among these rows."""

    file: str
    batch: pa.RecordBatch
    rows: npt.NDArray[np.int64]
    bad: list[BadLine] = field(default_factory=list)


def may_contain(arr: pa.Array, char: str) -> bool:
    """False when no value of the string array ``arr`` can contain ``char`` (one ASCII
    character), decided by one scan of its data buffer; True means "maybe, look closer"."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return True
    data = arr.buffers()[2]
    if data is None:
        return False
    return bool(data.to_pybytes().find(char.encode("ascii")) >= 0)

"""results.csv lines of rows found unchanged from their digests (:class:`UnchangedBlock`),
a block at a time.

A nightly re-run of a large, unchanged export reports nearly every row this way, so the lines
are built column-wise by Arrow kernels from the snapshot's columns and written as one text;
only a block with a cell that csv.writer would quote, or that must be neutralised
(:mod:`.csvsafe`), goes through csv.writer row by row. Both give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.model import RowStatus, UnchangedBlock, arrow_of, values_of
from recordsync.report.csvsafe import needs_neutralising, neutralise

QUOTED_CHARS = (",", '"', "\r", "\n")
"""What csv.writer (excel dialect, minimal quoting) quotes."""
_QUOTED_RE = '[,"\\r\\n]'
_FORMULA_RE = "^'*[=+\\-@\\t\\r]"  # csvsafe.TRIGGERS after any leading quotes


def plain(text: str) -> bool:
    """No character that csv.writer would quote."""
    return not any(c in text for c in QUOTED_CHARS)


def _any_match(texts: Any, pattern: str) -> bool:
    return bool(len(texts)) and bool(pc.any(pc.match_substring_regex(texts, pattern)).as_py())


def _columns(block: UnchangedBlock) -> tuple[pa.Array, pa.Array, pa.Array]:
    """match_by, match_value and record id as text, "" for none."""
    bys = pc.fill_null(arrow_of(block.match_by, pa.string()), "")
    mvs = pc.fill_null(arrow_of(block.match_value, pa.string()), "")
    rids = pc.fill_null(pc.cast(arrow_of(block.record_ids, pa.int64()), pa.string()), "")
    return bys, mvs, rids


def block_text(step: str, block: UnchangedBlock) -> str | None:
    """The block's lines as one text, or None when a cell needs quoting or neutralising."""
    n = len(block)
    bys, mvs, rids = _columns(block)
    if (
        not n
        or not plain(f"{step}\x00{block.source_file}")
        or needs_neutralising(step)
        or needs_neutralising(block.source_file)
        or _any_match(bys, _QUOTED_RE)
        or _any_match(mvs, _QUOTED_RE)
        or _any_match(mvs, _FORMULA_RE)
    ):
        return None
    rows = pc.cast(pa.array(np.asarray(block.source_rows, dtype=np.int64)), pa.string())
    unchanged = RowStatus.UNCHANGED.value
    lines = pc.binary_join_element_wise(
        step, block.source_file, rows, bys, mvs, unchanged, rids, "\r\n", ","
    )
    one = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), lines)
    text: str = pc.binary_join(one, "")[0].as_py()
    return text


def block_rows(step: str, block: UnchangedBlock) -> Iterator[tuple[Any, ...]]:
    """The block's rows for csv.writer (text cells neutralised)."""
    n = len(block)
    bys, mvs, rids = _columns(block)
    return zip(
        repeat(neutralise(step), n),
        repeat(neutralise(block.source_file), n),
        values_of(block.source_rows),
        bys.to_pylist(),
        [neutralise(v) for v in mvs.to_pylist()],
        repeat(RowStatus.UNCHANGED.value, n),
        rids.to_pylist(),
        repeat("", n),
        strict=False,
    )

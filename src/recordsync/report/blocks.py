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
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.core.model import RowStatus, UnchangedBlock, arrow_of, values_of
from recordsync.report.csvsafe import needs_neutralising, neutralise

QUOTED_CHARS = (",", '"', "\r", "\n")
"""What csv.writer (excel dialect, minimal quoting) quotes."""
_FORMULA_RE = "^'*[=+\\-@\\t\\r]"  # csvsafe.TRIGGERS after any leading quotes


def plain(text: str) -> bool:
    """No character that csv.writer would quote."""
    return not any(c in text for c in QUOTED_CHARS)


_QUOTED = np.frombuffer("".join(QUOTED_CHARS).encode("ascii"), np.uint8)
_TRIGGERS = np.frombuffer("=+-@\t\r'".encode("ascii"), np.uint8)  # csvsafe.TRIGGERS and '


def _utf8(texts: pa.Array) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
    """The offsets and data bytes of a string array (no copy)."""
    offsets, data = texts.buffers()[1], texts.buffers()[2]
    off = np.frombuffer(offsets, np.int32, count=len(texts) + 1, offset=texts.offset * 4)
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return off, raw


def _needs_quoting(texts: pa.Array) -> bool:
    """Whether a value holds a character csv.writer quotes (one scan of the bytes)."""
    off, raw = _utf8(texts)
    return bool(np.isin(raw[off[0] : off[-1]], _QUOTED).any())


def _may_need_neutralising(texts: pa.Array) -> bool:
    """Whether a value may need neutralising: it starts with a trigger or a quote (then the
    exact rule decides)."""
    off, raw = _utf8(texts)
    starts = off[:-1][off[1:] > off[:-1]]
    if not np.isin(raw[starts], _TRIGGERS).any():
        return False
    return bool(pc.any(pc.match_substring_regex(texts, _FORMULA_RE)).as_py())


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
        or _needs_quoting(bys)
        or _needs_quoting(mvs)
        or _may_need_neutralising(mvs)
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

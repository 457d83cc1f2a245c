"""Rows too large to send: a row whose batch entry cannot fit in one request is ``invalid``.

The service refuses a request body over its limit (the contract: 5 MiB, ``413``). A chunk
holding one oversized row would fail whole; so each row is checked as it is prepared, and one
whose entry (as :func:`recordsync.send.client.encode_batch` writes it) would not fit in a
request of ``send.max_request_bytes`` with the request's envelope fails alone, as ``invalid``,
naming its large columns and the sizes. The rest of its chunk is sent.

Encoding every row to measure it would cost the hot path: the source cells' UTF-8 bytes are
summed per row, column-wise, and only rows whose cells could make an entry that large
(escaping can grow a cell at most 6x: ``\\u0001``) are encoded and measured. A mapping that
makes a value much longer than its cells (a value_map to a long text, a template repeating a
column) can still pass this check; the sender then splits the chunk on a 413.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_REQUEST_BYTES = 5 * 1024 * 1024
"""The service's body limit (the contract's 5 MiB): the default of send.max_request_bytes."""
ENVELOPE_BYTES = len(b'{"objects":[]}') + 64
"""The request around one entry, and room for what the ledger adds (``match_by: id``)."""
_GROWTH = 6  # a control character becomes \u00XX
_SLACK = 4096  # keys, quotes and values a mapping adds (select values, defaults)


def entry_bytes(payload: dict[str, Any]) -> int:
    """The entry's size in a request body (encode_batch's encoding)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8", "surrogatepass"))


def oversized(batch: pa.RecordBatch, payloads: list[Any], limit: int | None) -> dict[int, str]:
    """``{batch row: error}`` for the rows whose entry exceeds ``limit - ENVELOPE_BYTES``."""
    if limit is None or batch.num_rows == 0:
        return {}
    room = limit - ENVELOPE_BYTES
    sizes: dict[str, np.ndarray] = {}
    total = np.zeros(batch.num_rows, dtype=np.int64)
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_string(col.type) or pa.types.is_binary(col.type):
            n = pc.binary_length(col).fill_null(0).to_numpy(zero_copy_only=False)
            sizes[name] = n
            total += n
    out: dict[int, str] = {}
    for i in np.flatnonzero(total * _GROWTH + _SLACK > room).tolist():
        payload = payloads[i]
        if payload is None:
            continue
        size = entry_bytes(payload)
        if size <= room:
            continue
        big = sorted(
            ((int(n[i]), c) for c, n in sizes.items() if n[i] * 10 >= total[i]), reverse=True
        )
        cols = ", ".join(f"'{c}' ({n:,} bytes)" for n, c in big) or "(none large alone)"
        out[i] = (
            f"row too large to send: its batch entry is {size:,} bytes, over the {room:,} one"
            f" entry may take in a request of {limit:,} bytes (send.max_request_bytes);"
            f" large column(s): {cols}"
        )
    return out

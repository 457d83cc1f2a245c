"""The prepare stage: read → map → resolve → validate → duplicate keys, one PreparedRow per row.

``core`` (``prepare_step``), ``source_check`` (``check_source``), ``dups`` (the duplicate
scan), ``merges`` (the merge scan) with ``merge_rules`` (the service's dedup rules it
predicts), ``salvage`` (malformed lines) and ``digests`` (the nightly fast path: rows
recognised by their cells).
"""

from recordsync.prepare.core import (
    ROW_BITS,
    SLICE_ROWS,
    Duplicates,
    check_batch_columns,
    check_source,
    ledger_keys,
    prepare_step,
    shared_hashes,
    text_hashes,
    where,
    winner,
)

__all__ = [
    "ROW_BITS",
    "SLICE_ROWS",
    "Duplicates",
    "check_batch_columns",
    "check_source",
    "ledger_keys",
    "prepare_step",
    "shared_hashes",
    "text_hashes",
    "where",
    "winner",
]

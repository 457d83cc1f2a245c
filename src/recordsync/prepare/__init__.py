"""The prepare stage: read → map → resolve → validate → duplicate keys, one PreparedRow per row.

``core`` (``prepare_step``), ``source_check`` (``check_source``), ``dups`` (the duplicate
scan), ``merges`` (the merge scan) with ``merge_rules`` (the service's dedup rules it
predicts), ``salvage`` (malformed lines) and ``digests`` (the nightly fast path: rows
recognised by their cells).
"""

from recordsync.prepare.core import *  # noqa: F403  (core's __all__: what callers use)
from recordsync.prepare.core import __all__ as __all__

"""A snapshot file's rows, compact: the match rule and value left out where the key says them.

A row's ledger key is most often its match rule and value (``email:ada@example.com`` for
``match_by: email``, ``match_value: ada@example.com``). The file keeps such a row's
``match_by`` and ``match_value`` as nulls and sets ``in_key``; any other row keeps them as
they are (``in_key`` false). About 40 of a snapshot row's 108 bytes on an e-mail-keyed
export. :func:`encode` makes a file batch of a row batch (:data:`SNAPSHOT_SCHEMA`),
:func:`decode` gives the columns back, for the rows taken (never the whole file at once: it is
memory-mapped).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from recordsync.state.digests import SNAPSHOT_SCHEMA

SNAPSHOT_FILE_SCHEMA = pa.schema([*SNAPSHOT_SCHEMA, pa.field("in_key", pa.bool_())])
"""The snapshot file's columns: :data:`SNAPSHOT_SCHEMA`'s and ``in_key`` (the row's match
rule and value are its key's: ``<match_by>:<match_value>``; stored as nulls)."""
NAMES = tuple(SNAPSHOT_SCHEMA.names)
_MATCH = ("match_by", "match_value")


def encode(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A :data:`SNAPSHOT_SCHEMA` batch as the file keeps it (:data:`SNAPSHOT_FILE_SCHEMA`).
    A rule holding ``:`` is always kept as it is (the key could not say where it ends)."""
    by, value, key = batch.column("match_by"), batch.column("match_value"), batch.column("key")
    joined = pc.binary_join_element_wise(by, value, ":")
    same = pc.fill_null(pc.equal(joined, key), False)
    in_key = pc.and_(same, pc.invert(pc.fill_null(pc.match_substring(by, ":"), True)))
    nulls = pa.nulls(batch.num_rows, pa.string())
    columns = [
        batch.column("d0"),
        batch.column("d1"),
        key,
        pc.if_else(in_key, nulls, by),
        pc.if_else(in_key, nulls, value),
        batch.column("record_id"),
        in_key,
    ]
    return pa.record_batch(columns, schema=SNAPSHOT_FILE_SCHEMA)


def stored_names(names: Sequence[str] | None) -> list[str]:
    """The file's columns that :func:`decode` needs for ``names`` (None: every column)."""
    wanted = list(NAMES if names is None else names)
    if any(n in _MATCH for n in wanted):
        wanted += [n for n in ("key", "in_key", *_MATCH) if n not in wanted]
    return wanted


def decode(table: pa.Table, names: Sequence[str] | None = None) -> pa.Table:
    """The columns ``names`` (None: :data:`SNAPSHOT_SCHEMA`'s) of file rows ``table`` (taken
    with at least :func:`stored_names`)."""
    wanted = list(NAMES if names is None else names)
    if not any(n in _MATCH for n in wanted):
        return table.select(wanted)
    in_key = table.column("in_key")
    columns = {n: table.column(n) for n in wanted if n not in _MATCH}
    ruled = _one_rule(table)
    if ruled is not None:  # every row's rule and value are its key's, with one rule
        by, value = ruled
        if "match_by" in wanted:
            columns["match_by"] = pa.repeat(pa.scalar(by, pa.string()), table.num_rows)
        if "match_value" in wanted:
            columns["match_value"] = value
    elif pc.any(in_key).as_py():
        keys = pc.if_else(in_key, table.column("key"), ":")  # every row split in two
        parts = pc.split_pattern(keys, ":", max_splits=1)
        from_key = {"match_by": pc.list_element(parts, 0), "match_value": None}
        if "match_value" in wanted:
            from_key["match_value"] = pc.list_element(parts, 1)
        for n in _MATCH:
            if n in wanted:
                columns[n] = pc.if_else(in_key, from_key[n], table.column(n))
    else:
        columns.update({n: table.column(n) for n in _MATCH if n in wanted})
    return pa.table([columns[n] for n in wanted], names=wanted)


def _one_rule(table: pa.Table) -> tuple[str, pa.ChunkedArray] | None:
    """When every row of ``table`` keeps its rule and value in its key and every key starts
    with one rule, an ASCII one (``email:`` on an e-mail-keyed export): that rule and the
    match values (the keys after it, sliced rather than split). None otherwise."""
    in_key, keys = table.column("in_key"), table.column("key")
    if not table.num_rows or in_key.null_count or not pc.all(in_key).as_py():
        return None
    first = keys[0].as_py()
    by = first.split(":", 1)[0] if first is not None and ":" in first else None
    if by is None or not by.isascii():
        return None
    prefix = f"{by}:"
    if keys.null_count or not pc.all(pc.starts_with(keys, prefix)).as_py():
        return None
    return by, pc.utf8_slice_codeunits(keys, len(prefix))

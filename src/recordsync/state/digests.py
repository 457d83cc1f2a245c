"""Source-row digests: recognise an unchanged source row without mapping it.

A nightly re-run of a large, mostly unchanged export would otherwise map, validate and hash
every row only to find it unchanged. Instead, each source row gets a 128-bit digest of its raw
cells (the columns the mapping reads), salted with the mapping's *fingerprint*: everything
else its batch input depends on (the mapping config, the service's schema, the users list —
owners and user-id fields are checked against it —, the owners file, the source columns'
names and types). Equal digest and
equal fingerprint imply the same batch input, so a row whose digest is in the *snapshot* of
the last run (rows that ended ``created``, ``updated`` or ``unchanged``) is unchanged, and
is reported from the snapshot (key, match value, record id) without being mapped.

Digest: the cells are cast to text, joined with U+001F (a null cell is U+0000), encoded as
UTF-8 and hashed with XXH3-128 (``xxhash``; its 16 bytes read as two little-endian 64-bit
words), then XORed with the salt. A cell containing U+001F would make the join ambiguous,
and so would a cell that is U+0000 alone (it joins as a null cell does): such rows get no
digest (they take the full path). The digest is never trusted across
fingerprints, and the fingerprint starts with :data:`FORMAT_TAG`: v1 digests were two keyed
SipHashes (``pandas.util.hash_array``); v2 (XXH3, no pandas import in a run) names another
tag, so a snapshot written before the upgrade is never taken and the first run after it
decides every row on the full path once (the ledger's input hashes still find them unchanged:
nothing is sent again).

The snapshot is an Arrow IPC file next to the state database (memory-mapped when read), its
registration a row of the ``snapshots`` table (:mod:`recordsync.state.snapshots`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

FORMAT_TAG = b"recordsync-source-digest-v2\n"  # v2: XXH3-128 (v1: SipHash, pandas)
_SEP = "\x1f"
_NULL = "\x00"

Digests = npt.NDArray[np.uint64]
"""Shape ``(n, 2)``: the two 64-bit halves of each row's digest."""


def fingerprint(
    mapping_json: str,
    object_type: Mapping[str, Any] | None,
    users: Sequence[Mapping[str, Any]] | None,
    owners_file: Path | None,
) -> bytes:
    """16 bytes naming everything besides the row's cells that its batch input depends on.
    ``owners_file``: the mapping's owners file, if it has one."""
    h = blake2b(FORMAT_TAG, digest_size=16)
    h.update(mapping_json.encode("utf-8"))
    h.update(b"\x00schema\x00")
    h.update(json.dumps(object_type, sort_keys=True, default=str).encode("utf-8"))
    h.update(b"\x00users\x00")
    if users is not None:
        h.update(json.dumps(list(users), sort_keys=True, default=str).encode("utf-8"))
    h.update(b"\x00owners\x00")
    if owners_file is not None:
        try:
            h.update(owners_file.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.digest()


def salt(fp: bytes, schema: pa.Schema) -> npt.NDArray[np.uint64]:
    """Two 64-bit words from the fingerprint and the batch's column names and types."""
    h = blake2b(fp, digest_size=16)
    for f in schema:
        h.update(f"{f.name}\x00{f.type}\x00".encode())
    return np.frombuffer(h.digest(), dtype=np.uint64)


def as_text(arr: pa.Array) -> pa.Array | None:
    """The column as UTF-8 text (nulls kept), or None for types without a faithful text."""
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_dictionary(t):
        return as_text(arr.dictionary_decode())
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
    ):
        try:
            return pc.cast(arr, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    return None


def _count_byte(text: pa.Array, byte: int) -> int:
    """How many times ``byte`` (ASCII) occurs in the values of a string array (one vectorised
    scan of its data; ``pc.count_substring`` takes 15 times longer)."""
    offsets, data = text.buffers()[1], text.buffers()[2]
    if not len(text) or offsets is None or data is None:
        return 0
    width = np.int64 if pa.types.is_large_string(text.type) else np.int32
    off = np.frombuffer(offsets, width, count=len(text) + 1, offset=text.offset * width(0).itemsize)
    values = np.frombuffer(data, np.uint8)[int(off[0]) : int(off[-1])]
    return int(np.count_nonzero(values == byte))


def supported(schema: pa.Schema, columns: Sequence[str]) -> bool:
    """Whether rows of this schema can be digested (every used column has a text form)."""
    for name in columns:
        if schema.get_field_index(name) < 0:
            return False
        t = schema.field(name).type
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return False
    return True


def row_digests(
    batch: pa.RecordBatch, columns: Sequence[str], fp: bytes
) -> tuple[Digests, npt.NDArray[np.bool_]] | None:
    """Each row's digest and whether it has one (False: a cell holds U+001F, or is U+0000
    alone, which joins as a null does). None when a column cannot be digested (nested or
    binary types): the batch takes the full path."""
    n = batch.num_rows
    texts: list[pa.Array] = []
    ok = np.ones(n, dtype=bool)
    for name in columns:
        text = as_text(batch.column(name))
        if text is None:
            return None
        texts.append(text)
    if any(pa.types.is_large_string(t.type) for t in texts):  # one kernel takes them all
        texts = [t.cast(pa.large_string()) for t in texts]
    sep = pa.scalar(_SEP, texts[0].type) if texts else _SEP
    # a null cell written as _NULL by the join itself (half the time of filling each column)
    joined = (
        pc.binary_join_element_wise(*texts, sep, null_handling="replace", null_replacement=_NULL)
        if texts
        else pa.array([""] * n)
    )
    if _count_byte(joined, 0x1F) != n * max(len(texts) - 1, 0):  # more than the join put in
        for text in texts:
            has_sep = pc.fill_null(pc.match_substring(text, _SEP), False)  # a null cell: no
            ok &= ~has_sep.to_numpy(zero_copy_only=False)
    if _count_byte(joined, 0x00) != sum(t.null_count for t in texts):  # not only the nulls'
        for text in texts:
            as_null = pc.fill_null(pc.equal(text, _NULL), False)  # the cell "\x00" reads as null
            ok &= ~as_null.to_numpy(zero_copy_only=False)
    # the UTF-8 bytes of each joined row (a cast to binary copies nothing), one XXH3-128 each
    binary = pa.large_binary() if pa.types.is_large_string(joined.type) else pa.binary()
    raw = b"".join(map(xxhash.xxh3_128_digest, joined.cast(binary).to_pylist()))
    out = np.frombuffer(raw, dtype="<u8").reshape(n, 2) ^ salt(fp, batch.schema)
    return out.astype(np.uint64, copy=False), ok


SNAPSHOT_SCHEMA = pa.schema(
    [
        ("d0", pa.uint64()),
        ("d1", pa.uint64()),
        ("key", pa.string()),
        ("match_by", pa.string()),
        ("match_value", pa.string()),
        ("record_id", pa.int64()),
    ]
)
"""A snapshot row: the digest, the row's ledger key, its match rule and value (for the
report and duplicate detection) and the record id it last landed on."""

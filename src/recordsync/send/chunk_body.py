"""What goes on the wire for a chunk, built on the runner's thread while the chunk before it
is in flight: the request body, joined from the rows' pre-encoded JSON (one encoding for the
input hash and the body, :func:`recordsync.state.hashing.encode_input`)."""

from __future__ import annotations

from operator import attrgetter

from recordsync.core.model import PreparedRow
from recordsync.send.client import encode_batch

_encoded, _since = attrgetter("encoded"), attrgetter("maybe_applied_since")


def request_body(rows: list[PreparedRow]) -> bytes | None:
    """The chunk's request body: joined from the rows' JSON where change detection made it
    (:attr:`PreparedRow.encoded`), else encoded here; None to let the sender encode it (and
    fail the chunk there, as for any request that cannot be sent)."""
    parts = list(map(_encoded, rows))
    if None not in parts:
        return b'{"objects":[' + b",".join(parts) + b"]}"
    try:
        return encode_batch([r.payload or {} for r in rows])
    except (TypeError, ValueError):
        return None


def doubtful(rows: list[PreparedRow]) -> list[float | None] | None:
    """When an earlier send of each row may have been applied (None: no row of the chunk)."""
    since = list(map(_since, rows))
    return None if since.count(None) == len(since) else since

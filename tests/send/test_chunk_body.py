"""A chunk's request body (recordsync.send.chunk_body): joined from the rows' pre-encoded
JSON when every row has it, else encoded from the payloads; and which rows are in doubt."""

from __future__ import annotations

import orjson

from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.send.chunk_body import doubtful, request_body
from recordsync.send.client import encode_batch


def _row(n: int, encoded: bool, since: float | None = None) -> PreparedRow:
    payload = {"name": f"R{n}", "fields": {"n": n}}
    row = PreparedRow(SourceRow("c.csv", n, {}), RowStatus.VALID, payload)
    row.encoded = orjson.dumps(payload) if encoded else None
    row.maybe_applied_since = since
    return row


def test_the_body_is_joined_from_pre_encoded_rows_or_encoded_whole() -> None:
    rows = [_row(2, True), _row(3, True)]
    body = request_body(rows)
    assert body == b'{"objects":[' + b",".join(r.encoded or b"" for r in rows) + b"]}"
    assert orjson.loads(body or b"") == {"objects": [r.payload for r in rows]}
    mixed = [_row(2, True), _row(3, False)]  # one row without its JSON: all encoded here
    assert request_body(mixed) == encode_batch([r.payload or {} for r in mixed])
    assert request_body([]) == b'{"objects":[]}'


def test_doubtful_lists_each_row_s_time_only_when_one_is_in_doubt() -> None:
    assert doubtful([_row(2, True), _row(3, True)]) is None
    assert doubtful([]) is None
    assert doubtful([_row(2, True), _row(3, True, 12.5)]) == [None, 12.5]

"""The journal's chunk texts (recordsync.state.journal_codec): outcomes compressed past a few
rows, read back exactly, JSON texts of older journals read as they are."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore
from recordsync.state.journal_codec import (
    PACKED,
    decode,
    is_plain,
    json_text,
    pack,
)

CELL = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),  # beyond 64 bits: json.dumps, not orjson
    st.text(),  # lone surrogates, NUL, any unicode
)


@given(st.lists(st.tuples(st.integers(0, 10**9), CELL, CELL, CELL), max_size=40))
def test_rows_come_back_exactly(rows: list[tuple[object, ...]]) -> None:
    text = pack(rows)
    assert isinstance(text, str)
    assert decode(text) == [list(r) for r in rows]
    assert text.startswith(PACKED) == (len(json_text(rows)) >= 512)
    if text.startswith(PACKED):
        assert not is_plain(text)
        assert text.isascii()  # text in an SQLite and a PostgreSQL column alike


def test_an_older_journals_json_is_read_as_it_is() -> None:
    rows = [[2, "email:a@x.example", "h", "created", 7, None]] * 30
    assert decode(json.dumps(rows)) == rows


def test_a_100_row_chunk_is_journaled_in_under_half_the_bytes(tmp_path: object) -> None:
    with StateStore(f"{tmp_path}/state.db") as store:
        journal = Journal(store, "p", defer_ledger=True)
        journal.start_run("r1")
        rows = [
            JournalRow(2 + i, f"email:someone.{i}@example.com", f"{i * 7919:032x}", True)
            for i in range(100)
        ]
        journal.begin_chunk("r1", "contacts", 1, 2, rows)
        journal.ack_chunk(
            "r1",
            "contacts",
            1,
            [ChunkResult(r.source_row, "created", 900 + i) for i, r in enumerate(rows)],
        )
        ((text, plain),) = store.connection.execute(
            "SELECT outcomes, plain FROM chunk_log"
        ).fetchall()
        as_json = json_text(
            [
                (r.source_row, r.key, r.input_hash, "created", 900 + i, None)
                for i, r in enumerate(rows)
            ]
        )
        assert text.startswith(PACKED) and plain == 0
        assert len(text) * 2 < len(as_json)
        got = {o.source_row: (o.source_key, o.status, o.record_id) for o in journal.outcomes("r1")}
        assert got == {r.source_row: (r.key, "created", 900 + i) for i, r in enumerate(rows)}
        assert len(journal.done_rows("r1", "contacts")) == 100
        assert journal.journaled_rows("r1", "contacts") is not None

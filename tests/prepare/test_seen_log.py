"""The first pass's log (prepare/seen_log.py): a query's kept rows on disk, read back as
written."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.prepare.seen_log import KeptRows, Seen

_TEXT = st.one_of(st.none(), st.text(max_size=12))
_NUMBER = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))


@st.composite
def _batches(draw: st.DrawFn) -> list[tuple[list[str | None], list[int | None], list[bool]]]:
    """Batches of a query's rows: two columns' cells and which rows the snapshot has."""
    out = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, 30))
        texts = draw(st.lists(_TEXT, min_size=n, max_size=n))
        numbers = draw(st.lists(_NUMBER, min_size=n, max_size=n))
        found = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        out.append((texts, numbers, found))
    return out


@settings(max_examples=60, deadline=None)
@given(_batches())
def test_kept_rows_read_back_are_the_rows_written_in_their_batches(
    batches: list[tuple[list[str | None], list[int | None], list[bool]]],
) -> None:
    schema = pa.schema([("Email", pa.string()), ("Score", pa.int64())])
    kept = KeptRows()
    seens: list[tuple[Seen, pa.RecordBatch]] = []
    line = 2
    for texts, numbers, found in batches:
        rows = np.arange(line, line + len(texts), dtype=np.int64)
        line += len(texts)
        at = np.array([i if f else -1 for i, f in enumerate(found)], dtype=np.int64)
        whole = pa.record_batch([pa.array(texts, pa.string()), pa.array(numbers)], schema=schema)
        slow = whole.take(pa.array(np.flatnonzero(at < 0)))  # as the first pass takes them
        assert kept.add(slow)
        seens.append((Seen("query:c", rows, None, None, at), slow))
    kept.finish()
    assert kept.rows == sum(b.num_rows for _, b in seens)
    try:
        for seen, written in seens:
            back = kept.next(seen)
            assert back.file == "query:c" and back.bad == []
            assert back.batch.equals(written)
            assert back.rows.tolist() == seen.rows[seen.found < 0].tolist()
    finally:
        kept.close()


def test_a_batch_of_another_schema_is_refused_and_nothing_of_it_written() -> None:
    kept = KeptRows()
    try:
        assert kept.add(pa.record_batch({"a": pa.array(["x", None])}))
        assert not kept.add(pa.record_batch({"a": pa.array([1])}))
        kept.finish()
        back = kept.next(Seen("q", np.array([2, 3]), None, None, np.array([-1, -1])))
        assert back.batch.column(0).to_pylist() == ["x", None]
    finally:
        kept.close()

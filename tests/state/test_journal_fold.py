"""Deferred ledger writes (``Journal(defer_ledger=True)``): the ledger folded from the journal
in bulk ends exactly where per-chunk writes leave it; a resumed run folds what a dead attempt
acknowledged; finishing a run folds before the per-row journal is dropped."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.state import (
    ChunkResult,
    Journal,
    JournalRow,
    StateStore,
    journal_codec,
    ledger_rows,
)

_STATUSES = ("created", "updated", "failed", "in_doubt")


def _ledger(store: StateStore, mapping: str = "m") -> list[tuple[object, ...]]:
    return [(*e[:4], e.last_run_id) for e in store.entries("p", mapping)]


# one chunk = rows of (key index, status, record id or None, error or None)
_chunk = st.lists(
    st.tuples(
        st.integers(0, 12),
        st.sampled_from(_STATUSES),
        st.none() | st.integers(1, 10**12),
        st.none() | st.sampled_from(["boom", "é ünïcode", "nul\x00inside", 'quote " \\ x']),
    ),
    min_size=1,
    max_size=8,
)


def _play(
    store: StateStore,
    chunks: list[list[tuple[int, str, int | None, str | None]]],
    defer: bool,
    fold_every: int = 3,
    slices: tuple[int, int] | None = None,
) -> Journal:
    j = Journal(store, "p", defer_ledger=defer)
    j.slices = slices
    j.start_run("r1")
    source_row = 2
    for n, chunk in enumerate(chunks, start=1):
        rows, results = [], []
        for key, status, rid, error in chunk:
            name = {0: None, 11: "k\x00eleven"}.get(key, f"k{key}")  # a NUL: the Python fold
            rows.append(JournalRow(source_row, name, f"h{source_row}"))
            results.append(ChunkResult(source_row, status, rid, error))
            source_row += 1
        j.begin_chunk("r1", "s", n, rows[0].source_row, rows, mapping="m")
        j.ack_chunk("r1", "s", n, results)
        if defer and fold_every and n % fold_every == 0:
            j.fold()
    return j


@settings(max_examples=25, deadline=None)
@given(
    chunks=st.lists(_chunk, min_size=1, max_size=6),
    slices=st.tuples(st.integers(0, 12), st.integers(1, 5)),
    fold_every=st.sampled_from([0, 2, 3]),
    pack_from=st.sampled_from([0, 10**9]),
)
def test_folded_ledger_equals_per_chunk_writes(
    tmp_path_factory: object,
    chunks: list[list[tuple[int, str, int | None, str | None]]],
    slices: tuple[int, int],
    fold_every: int,
    pack_from: int,
) -> None:
    """With the outcomes journaled compressed (``pack_from`` 0: every chunk, folded in
    Python) or as JSON (folded with SQLite's JSON functions where it can)."""
    base = Path(tmp_path_factory.mktemp("fold"))  # type: ignore[attr-defined]
    with (
        mock.patch.object(journal_codec, "PACK_FROM", pack_from),
        StateStore(base / "a.db", durable=False) as a,
        StateStore(base / "b.db", durable=False) as b,
        StateStore(base / "c.db", durable=False) as c,
        StateStore(base / "d.db", durable=False) as d,
        StateStore(base / "e.db", durable=False) as e,
    ):
        ja = _play(a, chunks, defer=False)
        jb = _play(b, chunks, defer=True)
        # written a slice with each acknowledgement (and folds between some of them)
        je = _play(e, chunks, defer=True, fold_every=fold_every, slices=slices)
        je.finish_run("r1")
        assert je.unfolded_rows == 0 and _ledger(e) == _ledger(a)
        # folded only from the journal (as a resumed run does): with SQLite's JSON functions,
        # and without them
        c._json_each = False
        for store in (c, d):
            _play(store, chunks, defer=True, fold_every=0)
            Journal(store, "p", defer_ledger=True).fold_run("r1")
            assert _ledger(store) == _ledger(a)
        # the journal holds exactly the acknowledged results (bulk JSON update or per row)
        given_results = [(status, rid, err) for chunk in chunks for _, status, rid, err in chunk]
        assert [(o.status, o.record_id, o.error) for o in jb.outcomes("r1")] == given_results
        assert list(ja.outcomes("r1")) == list(jb.outcomes("r1"))
        jb.fold()
        assert _ledger(a) == _ledger(b)
        jb.fold_run("r1")  # folding again changes nothing
        assert _ledger(a) == _ledger(b)


def test_ack_defers_ledger_until_fold(store: StateStore) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.start_run("r1")
    rows = [JournalRow(2, "k2", "h2"), JournalRow(3, "k3", "h3")]
    j.begin_chunk("r1", "s", 1, 2, rows, mapping="m")
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 7), ChunkResult(3, "failed", None, "x")])
    assert store.get("p", "m", "k2") is None and j.unfolded_rows == 2
    assert [o.status for o in j.outcomes("r1")] == ["created", "failed"]
    assert j.fold() == 2 and j.unfolded_rows == 0
    entry = store.get("p", "m", "k2")
    assert entry is not None and (entry.record_id, entry.input_hash) == (7, "h2")
    failed = store.get("p", "m", "k3")
    assert failed is not None and (failed.last_status, failed.input_hash) == ("failed", None)


def test_finish_run_folds_before_dropping_the_rows(store: StateStore) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.start_run("r1")
    j.begin_chunk("r1", "s", 1, 2, [JournalRow(2, "k2", "h2")], mapping="m")
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "updated", 9)])
    j.finish_run("r1")
    entry = store.get("p", "m", "k2")
    assert entry is not None and (entry.record_id, entry.last_status) == (9, "updated")
    assert list(j.outcomes("r1")) == []


def test_resume_folds_what_the_dead_attempt_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = StateStore(db, durable=False)
    dead = Journal(store, "p", defer_ledger=True)
    dead.start_run("r1")
    dead.begin_chunk("r1", "s", 1, 2, [JournalRow(2, "k2", "h2")], mapping="m")
    dead.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 5)])
    dead.begin_chunk("r1", "s", 2, 3, [JournalRow(3, "k3", "h3")], mapping="m")  # in flight
    store.close()  # the process dies: nothing folded
    with StateStore(db) as again:
        assert again.get("p", "m", "k2") is None
        info, resumed = Journal(again, "p", defer_ledger=True).resume_or_start("r2")
        assert resumed and info.run_id == "r1"
        entry = again.get("p", "m", "k2")
        assert entry is not None and (entry.record_id, entry.input_hash) == (5, "h2")
        assert again.get("p", "m", "k3") is None  # in flight: settled, not folded


def test_a_fold_that_fails_keeps_the_outcomes_to_fold(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.start_run("r1")
    j.begin_chunk("r1", "s", 1, 2, [JournalRow(2, "k2", "h2")], mapping="m")
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 5)])

    def broken(*args: object) -> int:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(j.ledger_fold, "fold_range", broken)  # from the journal
    monkeypatch.setattr(ledger_rows, "LEDGER_UPSERT", "INSERT INTO gone VALUES (?)")  # kept
    with pytest.raises(sqlite3.OperationalError):
        j.fold()
    with pytest.raises(sqlite3.OperationalError):
        j.finish_run("r1")
    monkeypatch.undo()
    assert j.unfolded_rows == 1 and store.get("p", "m", "k2") is None
    j.finish_run("r1")
    entry = store.get("p", "m", "k2")
    assert entry is not None and entry.record_id == 5


def test_chunks_acknowledged_out_of_order_are_folded_from_the_journal(store: StateStore) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.start_run("r1")
    for n in (1, 2):
        j.begin_chunk("r1", "s", n, n + 1, [JournalRow(n + 1, f"k{n}", f"h{n}")], mapping="m")
    j.ack_chunk("r1", "s", 2, [ChunkResult(3, "created", 30)])
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "updated", 20)])
    assert j.fold() == 2
    assert [(e.source_key, e.record_id, e.last_status) for e in store.entries("p", "m")] == [
        ("k1", 20, "updated"),
        ("k2", 30, "created"),
    ]


def test_acknowledgements_write_the_ledger_in_key_sorted_slices(store: StateStore) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.slices = (4, 3)  # a sorted batch once 4 rows wait, 3 rows written per acknowledgement
    j.start_run("r1")
    keys = ["k7", "k2", "k9", "k1", "k5", "k3"]
    seen: list[list[str]] = []
    for n, (first, second) in enumerate(zip(keys[::2], keys[1::2], strict=True), start=1):
        rows = [JournalRow(2 * n, first, "h"), JournalRow(2 * n + 1, second, "h")]
        j.begin_chunk("r1", "s", n, 2 * n, rows, mapping="m")
        j.ack_chunk("r1", "s", n, [ChunkResult(r.source_row, "created", n) for r in rows])
        seen.append([e.source_key for e in store.entries("p", "m")])
    # chunk 1: 2 rows wait; chunk 2: 4 wait, sorted (k1 k2 k7 k9), 3 written; chunk 3: the
    # batch's last row; the chunk's own rows wait for the next batch or the fold
    assert seen == [[], ["k1", "k2", "k7"], ["k1", "k2", "k7", "k9"]]
    assert j.unfolded_rows == 2
    assert j.fold() == 2 and sorted(e.source_key for e in store.entries("p", "m")) == sorted(keys)


def test_a_slice_whose_acknowledgement_rolls_back_is_written_again(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.slices = (1, 1)
    j.start_run("r1")
    for n in (1, 2):
        j.begin_chunk("r1", "s", n, n + 1, [JournalRow(n + 1, f"k{n}", f"h{n}")], mapping="m")
    monkeypatch.setattr(ledger_rows, "LEDGER_UPSERT", "INSERT INTO gone VALUES (?)")
    with pytest.raises(sqlite3.OperationalError):  # the slice fails: the ack rolls back too
        j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 20)])
    assert j.unfolded_rows == 0 and list(j.outcomes("r1")) == []
    monkeypatch.undo()
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 20)])
    j.ack_chunk("r1", "s", 2, [ChunkResult(3, "updated", 30)])
    assert [(e.source_key, e.record_id) for e in store.entries("p", "m")] == [
        ("k1", 20),
        ("k2", 30),
    ]
    assert j.unfolded_rows == 0 and j.fold() == 0


def test_a_chunk_acknowledged_after_a_later_one_was_written_is_refolded(
    store: StateStore,
) -> None:
    j = Journal(store, "p", defer_ledger=True)
    j.slices = (1, 10)
    j.start_run("r1")
    for n in (1, 2, 3):  # the same key in chunks 1 and 3: chunk 3's outcome is the last
        key = "k2" if n == 2 else "k1"
        j.begin_chunk("r1", "s", n, n + 1, [JournalRow(n + 1, key, f"h{n}")], mapping="m")
    j.ack_chunk("r1", "s", 3, [ChunkResult(4, "updated", 30)])
    assert [e.record_id for e in store.entries("p", "m")] == [30]  # written by the slice
    j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 10)])
    j.ack_chunk("r1", "s", 2, [ChunkResult(3, "created", 20)])
    j.fold()
    assert [(e.source_key, e.record_id) for e in store.entries("p", "m")] == [
        ("k1", 30),
        ("k2", 20),
    ]


def test_a_slice_is_written_in_the_journals_own_transactions_only(store: StateStore) -> None:
    """An acknowledgement inside :meth:`Journal.transaction` writes its slice, and a rollback
    of that transaction restores what was kept; inside a bare store transaction it does not
    (what was kept could not be restored if that one rolled back)."""
    j = Journal(store, "p", defer_ledger=True)
    j.slices = (1, 10)
    j.start_run("r1")
    for n in (1, 2, 3):
        j.begin_chunk("r1", "s", n, n + 1, [JournalRow(n + 1, f"k{n}", f"h{n}")], mapping="m")
    with store.transaction():
        j.ack_chunk("r1", "s", 1, [ChunkResult(2, "created", 10)])
    assert list(store.entries("p", "m")) == [] and j.unfolded_rows == 1
    with pytest.raises(RuntimeError), j.transaction():
        j.ack_chunk("r1", "s", 2, [ChunkResult(3, "created", 20)])
        assert len(list(store.entries("p", "m"))) == 2  # the slice, in this transaction
        raise RuntimeError("the chunk begun with it failed")
    assert list(store.entries("p", "m")) == [] and j.unfolded_rows == 1
    with j.transaction():
        j.ack_chunk("r1", "s", 2, [ChunkResult(3, "created", 20)])
        j.ack_chunk("r1", "s", 3, [ChunkResult(4, "created", 30)])
    assert [e.record_id for e in store.entries("p", "m")] == [10, 20, 30]
    assert j.unfolded_rows == 0


def test_rows_orjson_refuses_are_journaled_and_folded_all_the_same(store: StateStore) -> None:
    """An error text with a lone surrogate: the journal's JSON falls back to json.dumps for
    that chunk, and it reads back and folds as any other."""
    j = Journal(store, "p", defer_ledger=True)
    j.start_run("r1")
    rows = [JournalRow(2, "k2", "h2"), JournalRow(3, "k3", "h3")]
    j.begin_chunk("r1", "s", 1, 2, rows, mapping="m")
    j.ack_chunk(
        "r1", "s", 1, [ChunkResult(2, "created", 7), ChunkResult(3, "failed", None, "\ud800")]
    )
    assert [(o.source_row, o.error) for o in j.outcomes("r1")] == [(2, None), (3, "\ud800")]
    j.finish_run("r1", keep_rows=True)
    assert [(e.source_key, e.record_id, e.last_status) for e in store.entries("p", "m")] == [
        ("k2", 7, "created"),
        ("k3", None, "failed"),
    ]

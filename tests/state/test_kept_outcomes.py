"""What a finished run keeps of its journal (recordsync.state.kept_outcomes): only the outcomes
the ledger cannot tell, without input hashes; ``history --key`` reads the rest from the
ledger."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from recordsync.state import ChunkResult, Journal, JournalRow, StateStore, input_hash, journal_codec
from recordsync.state import journal as journal_module
from recordsync.state.history import RunHistory
from recordsync.state.journal_codec import decode
from recordsync.state.kept_outcomes import keep_untold

from .test_history import rec


def _key(i: int) -> str:
    return f"email:someone.{i}@example.com"


@pytest.mark.parametrize(("defer", "json"), [(True, True), (False, True), (True, False)])
def test_a_finished_run_keeps_only_what_the_ledger_cannot_tell(
    tmp_path: Path, defer: bool, json: bool
) -> None:
    """``json``: compared inside SQLite; without its JSON functions (as on PostgreSQL), the
    ledger rows are read back and compared here."""
    with StateStore(tmp_path / "state.db", durable=False) as store:
        store._json_each = json
        journal = Journal(store, "p", defer_ledger=defer)
        journal.start_run("r1")
        rows = [JournalRow(2 + i, _key(i), input_hash({"name": f"n{i}"})) for i in range(300)]
        rows[250] = JournalRow(252, None, None)  # no key: history never looks it up
        rows[260] = JournalRow(262, _key(7), input_hash({"name": "again"}))  # key 7 again
        results: list[ChunkResult] = [
            ChunkResult(r.source_row, "created", 900 + i) for i, r in enumerate(rows)
        ]
        results[10] = ChunkResult(12, "failed", None, "Validation failed: email")
        results[11] = ChunkResult(13, "in_doubt", None, "in flight when the run stopped")
        results[120] = ChunkResult(122, "created", None)  # the service gave no record id
        results[260] = ChunkResult(262, "updated", 909)  # key 7's last outcome of the run
        for n in range(3):
            part = rows[100 * n : 100 * (n + 1)]
            journal.begin_chunk("r1", "contacts", n + 1, part[0].source_row, part)
            journal.ack_chunk("r1", "contacts", n + 1, results[100 * n : 100 * (n + 1)])
        journal.finish_run("r1", keep_rows=True)
        conn = store.connection
        kept = {
            n: decode(text) for n, text in conn.execute("SELECT chunk_no, outcomes FROM chunk_log")
        }
        assert kept == {
            1: [
                [9, _key(7), None, "created", 907, None],  # replaced by a later outcome
                [12, _key(10), None, "failed", None, "Validation failed: email"],
                [13, _key(11), None, "in_doubt", None, "in flight when the run stopped"],
            ],
            2: [[122, _key(120), None, "created", None, None]],
        }  # chunk 3 repeated the ledger only: gone; its count stays
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 3
        entry = store.get("p", "contacts", _key(7))
        assert entry is not None and (entry.record_id, entry.last_status) == (909, "updated")
        RunHistory(store).record(rec("r1", "2026-11-01T02:00:00Z", state_key="p", pipeline="p"))
        events = RunHistory(store).key_events("p", _key(7))
        assert [(e.status, e.record_id, e.source_row) for e in events] == [
            ("created", 907, 9),
            ("updated", 909, None),  # the head, from the ledger
        ]
        events = RunHistory(store).key_events("p", "someone.200@example.com")
        assert [(e.run_id, e.step, e.status, e.record_id) for e in events] == [
            ("r1", "contacts", "created", 1100)
        ]
        failed = RunHistory(store).key_events("p", _key(10))
        assert [(e.status, e.error, e.source_row) for e in failed] == [
            ("failed", "Validation failed: email", 12)
        ]


# -- the tally's fast path: exactly what comparing each outcome with the ledger keeps --------

_FINAL = ("created", "updated", "failed", "in_doubt")

# one chunk = rows of (key index (0: no key; 20: a key with a NUL), status, record id, error)
_chunk = st.lists(
    st.tuples(
        st.integers(0, 20),
        st.sampled_from(_FINAL),
        st.none() | st.integers(1, 40),
        st.none() | st.sampled_from(["", "boom"]),
    ),
    min_size=1,
    max_size=5,
)


@dataclass(frozen=True)
class _Scenario:
    mappings: list[str]
    """One a step (``s0``, ``s1``): two steps may write one mapping."""
    chunks: list[list[list[tuple[int, str, int | None, str | None]]]]
    """A step's chunks."""
    before: list[tuple[int, int]]
    """(key index, record id) an earlier run created in ``m1``."""
    defer: bool
    swap: bool
    """Acknowledge each step's first two chunks in reverse order."""
    dies_after: int | None
    """The first attempt dies after that many chunks, one more begun and never answered;
    another Journal resumes the run."""
    deleted: list[tuple[str, int]]
    """(mapping, key index) a mirror delete marks deleted during the run."""
    vanished: list[tuple[str, int]]
    """(mapping, key index) the target's check marks deleted (the run's number left as is)."""


@st.composite
def _scenarios(draw: st.DrawFn) -> _Scenario:
    mappings = draw(st.lists(st.sampled_from(["m1", "m2"]), min_size=1, max_size=2))
    return _Scenario(
        mappings,
        [draw(st.lists(_chunk, min_size=1, max_size=4)) for _ in mappings],
        draw(st.lists(st.tuples(st.integers(1, 20), st.integers(50, 60)), max_size=4)),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.sampled_from([None, None, None, 0, 1, 2, 3])),
        draw(st.lists(st.tuples(st.sampled_from(["m1", "m2"]), st.integers(1, 20)), max_size=2)),
        draw(st.lists(st.tuples(st.sampled_from(["m1", "m2"]), st.integers(1, 20)), max_size=2)),
    )


def _name(i: int) -> str | None:
    return {0: None, 20: "k\x00twenty"}.get(i, f"k{i}")


def _play(store: StateStore, pipeline: str, sc: _Scenario, *, tally: bool) -> int:
    """Play ``sc`` as run ``{pipeline}-r1`` and finish it keeping rows; returns the chunks
    :func:`keep_untold` decided from the tally (``tally=False``: none, every outcome compared
    with the ledger)."""
    run = f"{pipeline}-r1"
    if sc.before:
        j0 = Journal(store, pipeline)
        j0.start_run(f"{pipeline}-r0")
        rows = [JournalRow(2 + n, _name(i), f"old{i}") for n, (i, _) in enumerate(sc.before)]
        j0.begin_chunk(f"{pipeline}-r0", "s0", 1, 2, rows, mapping="m1")
        done = [ChunkResult(2 + n, "created", rid) for n, (_, rid) in enumerate(sc.before)]
        j0.ack_chunk(f"{pipeline}-r0", "s0", 1, done)
        j0.finish_run(f"{pipeline}-r0", keep_rows=True)
    j = Journal(store, pipeline, defer_ledger=sc.defer)
    j.start_run(run)
    sent = 0
    for s, (mapping, chunks) in enumerate(zip(sc.mappings, sc.chunks, strict=True)):
        step = f"s{s}"
        row = 2
        begun: list[tuple[int, list[ChunkResult]]] = []
        for c, chunk in enumerate(chunks):
            if sc.dies_after is not None and sent == sc.dies_after:
                # a kill -9: one more chunk begun, its answer lost; another process resumes
                n = j.next_chunk_no(run, step)
                rows = [JournalRow(row + i, f"lost{i}", "h", i % 2 == 0) for i in range(2)]
                j.begin_chunk(run, step, n, row, rows, mapping=mapping)
                row += 2
                j = Journal(store, pipeline, defer_ledger=sc.defer)
                info, resumed = j.resume_or_start("unused")
                assert resumed and info.run_id == run
                j.settle_in_flight(run)
                begun.clear()  # settled with the lost chunk
            n = j.next_chunk_no(run, step)
            rows = [
                JournalRow(row + i, _name(k), f"h{k}.{row + i}") for i, (k, *_) in enumerate(chunk)
            ]
            results = [
                ChunkResult(row + i, st_, rid, err) for i, (_, st_, rid, err) in enumerate(chunk)
            ]
            j.begin_chunk(run, step, n, row, rows, mapping=mapping)
            row += len(chunk)
            sent += 1
            begun.append((n, results))
            if not (sc.swap and c == 0 and len(chunks) > 1):
                for n_, results_ in reversed(begun):
                    j.ack_chunk(run, step, n_, results_)
                begun.clear()
        j.fold()
        for mapping_, i in sc.deleted:  # as state.mirror.apply_deletes marks a delete
            scope = store.scope_id(pipeline, mapping_, create=False)
            with store.transaction() as conn:
                conn.execute(
                    "UPDATE ledger SET last_status = 4, input_hash = NULL, last_run = ?"
                    " WHERE scope_id = ? AND source_key = ?",
                    (store.run_number(run), scope, _name(i)),
                )
        for mapping_, i in sc.vanished:  # as nightly.target_check marks a vanished record
            scope = store.scope_id(pipeline, mapping_, create=False)
            with store.transaction() as conn:
                conn.execute(
                    "UPDATE ledger SET input_hash = NULL, last_status = 4"
                    " WHERE scope_id = ? AND source_key = ?",
                    (scope, _name(i)),
                )
    if not tally:
        j._tallies.clear()
    decided: list[int] = []
    with mock.patch.object(
        journal_module, "keep_untold", side_effect=lambda *a: decided.append(keep_untold(*a))
    ):
        j.finish_run(run, keep_rows=True)
    return decided[0]


def _kept(store: StateStore, pipeline: str) -> tuple[str, list[tuple[object, ...]]]:
    run = f"{pipeline}-r1"
    chunks = store.connection.execute(
        "SELECT step, chunk_no, outcomes, plain FROM chunk_log WHERE run_id = ?"
        " ORDER BY step, chunk_no",
        (run,),
    ).fetchall()
    ledger = [
        (m, *e[:4], (e.last_run_id or "").removeprefix(pipeline))
        for m in ("m1", "m2")
        for e in store.entries(pipeline, m)
    ]
    kept = [(s, n, t and decode(t), p) for s, n, t, p in chunks]
    return repr(kept).replace(run, "RUN"), ledger  # a hold's reason names the run


def _fast_expected(sc: _Scenario) -> bool:
    """Whether the tally must decide every chunk: one attempt, no key with two final outcomes
    in a mapping, no key of the run marked deleted."""
    if sc.dies_after is not None and sc.dies_after < sum(map(len, sc.chunks)):
        return False
    keys: dict[str, list[str]] = {}
    for mapping, chunks in zip(sc.mappings, sc.chunks, strict=True):
        keys.setdefault(mapping, []).extend(
            str(_name(k)) for chunk in chunks for k, *_ in chunk if k != 0
        )
    if any(len(set(ks)) != len(ks) for ks in keys.values()):
        return False
    marked = set(sc.deleted) | set(sc.vanished)
    return not any(str(_name(i)) in keys.get(m, []) for m, i in marked)


def _check(store: StateStore, n: int, sc: _Scenario) -> bool:
    """The same kept outcomes and ledger from the tally and outcome by outcome; whether the
    tally decided every chunk (it must, where :func:`_fast_expected`)."""
    fast = _play(store, f"fast{n}", sc, tally=True)
    slow = _play(store, f"slow{n}", sc, tally=False)
    assert slow == 0
    assert _kept(store, f"fast{n}") == _kept(store, f"slow{n}")
    everything = fast == sum(map(len, sc.chunks))
    if _fast_expected(sc):
        assert everything, "every chunk decided from the tally"
    return everything


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=_scenarios(), pack_from=st.sampled_from([0, 10**9]))
def test_the_tally_keeps_exactly_what_comparing_with_the_ledger_keeps(
    tmp_path_factory: pytest.TempPathFactory, sc: _Scenario, pack_from: int
) -> None:
    """Duplicate keys, rows without a key, failures and holds, outcomes without a record id
    or with an error, two steps into one mapping, acknowledgements out of order, a run that
    died and was resumed, mirror deletes and vanished records: what a finished run keeps, and
    its ledger, are the same whether decided from the tally or outcome by outcome."""
    path = tmp_path_factory.mktemp("tally") / "state.db"
    with (
        mock.patch.object(journal_codec, "PACK_FROM", pack_from),
        StateStore(path, durable=False) as store,
    ):
        event(f"every chunk from the tally: {_check(store, 0, sc)}")


def _case(
    mappings: list[str],
    chunks: list[list[list[tuple[int, str, int | None, str | None]]]],
    *,
    before: list[tuple[int, int]] | None = None,
    dies_after: int | None = None,
    deleted: list[tuple[str, int]] | None = None,
    vanished: list[tuple[str, int]] | None = None,
) -> _Scenario:
    return _Scenario(
        mappings, chunks, before or [], True, False, dies_after, deleted or [], vanished or []
    )


_SENT = [[[(1, "created", 5, None), (2, "updated", 6, None)], [(3, "created", 7, None)]]]
_CASES = {
    "clean, a failure, an error, no record id, no key": _case(
        ["m1"],
        [
            [
                [(1, "created", 5, None), (2, "failed", None, "x"), (3, "created", 6, "")],
                [(4, "updated", None, None), (0, "created", 7, None), (5, "in_doubt", 8, "y")],
                [(6, "created", 9, None)],
            ]
        ],
        before=[(4, 50)],
    ),
    "a key sent by two steps into one mapping": _case(
        ["m1", "m1"], [[[(1, "created", 5, None)]], [[(1, "updated", 6, None)]]]
    ),
    "a key twice, the same outcome": _case(
        ["m1", "m1"], [[[(1, "updated", 5, None)]], [[(1, "updated", 5, None)]]], before=[(1, 5)]
    ),
    "one key in two mappings": _case(
        ["m1", "m2"], [[[(1, "created", 5, None)]], [[(1, "created", 8, None)]]]
    ),
    "a key the run sent, then deleted by a mirror": _case(["m1"], _SENT, deleted=[("m1", 2)]),
    "a key the run did not send, deleted by a mirror": _case(
        ["m1"], _SENT, before=[(9, 50)], deleted=[("m1", 9)]
    ),
    "a key the run sent, then vanished from the target": _case(["m1"], _SENT, vanished=[("m1", 3)]),
    "a resumed run": _case(["m1"], _SENT, dies_after=1),
    "a resumed run sends again a key the first attempt sent": _case(
        ["m1"], [[[(1, "created", 5, None)], [(1, "updated", 6, None)]]], dies_after=1
    ),
    "a resumed run, the first attempt lost its first chunk": _case(["m1"], _SENT, dies_after=0),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_the_tally_in_each_case(tmp_path: Path, name: str) -> None:
    with StateStore(tmp_path / "state.db", durable=False) as store:
        _check(store, 0, _CASES[name])


def test_the_tally_on_postgresql(pg_url: str) -> None:
    """The same on a PostgreSQL state (no JSON functions: the comparison reads ledger heads)."""
    with StateStore(pg_url) as store:
        for n, sc in enumerate(_CASES.values()):
            _check(store, n, sc)

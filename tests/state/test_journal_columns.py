"""The journal's column-wise paths (built with loops in C) give what the row-by-row rules do."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.state import StateStore
from recordsync.state.journal import Journal, _align
from recordsync.state.journal_columns import (
    RowMarks,
    as_list,
    chunk_results,
    journal_rows,
    outcome_rows,
)
from recordsync.state.journal_records import ChunkResult, JournalRow
from recordsync.state.ledger_rows import STATUS_CODES, pack_hash
from recordsync.state.store import ACKED_FAILED, ACKED_SENT

Journaled = dict[int, tuple[str | None, str | None]]
numbers = st.one_of(
    st.lists(st.integers(-50, 400), max_size=40),
    # a run of numbers, as a chunk's rows come (in any order; marked at once)
    st.builds(lambda a, n: list(range(a, a + n)), st.integers(0, 400), st.integers(1, 40)),
    st.builds(lambda a, n: list(range(a, a + n))[::-1], st.integers(0, 40), st.integers(1, 90)),
)


@given(st.lists(numbers, max_size=5), numbers)
def test_marked_rows_are_those_in_the_set(updates: list[list[int]], asked: list[int]) -> None:
    marks, plain = RowMarks(), set[int]()
    for batch in updates:
        marks.update(batch)
        plain.update(batch)
    assert marks.marked(asked) == [n for n in asked if n in plain]


def test_rows_above_every_marked_one_are_found_new_at_once() -> None:
    marks = RowMarks()
    marks.update([5, 9, -3])
    assert marks.marked([10, 11]) == [] and marks.marked([9, 10]) == [9]
    assert marks.marked([-3, 12]) == [-3] and marks.marked([]) == []


def _kept_row_by_row(
    scope: int,
    outcomes: list[ChunkResult],
    journaled: dict[int, tuple[str | None, str | None]],
    run_no: int,
) -> list[tuple[object, ...]]:
    """The ledger rows an acknowledgement keeps, by the rules one row at a time."""
    rows: list[tuple[object, ...]] = []
    for o in sorted(outcomes, key=lambda o: o.source_row):
        k, h = journaled[o.source_row]
        if k is None:
            continue
        if o.status in ACKED_SENT:
            rows.append((scope, k, o.record_id, pack_hash(h), STATUS_CODES[o.status], run_no))
        elif o.status in ACKED_FAILED:
            rows.append((scope, k, None, None, STATUS_CODES[o.status], run_no))
    return rows


outcome = st.tuples(
    st.sampled_from(["created", "updated", "failed", "in_doubt"]),
    st.one_of(st.none(), st.integers(1, 10**6)),
    st.one_of(st.none(), st.text(max_size=8)),  # the key (None: an untracked row)
    st.booleans(),  # an error message
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(st.lists(outcome, max_size=30), st.randoms(use_true_random=False))
def test_kept_ledger_rows_match_the_row_by_row_rules(
    tmp_path: Path, drawn: list[tuple[str, int | None, str | None, bool]], rnd: object
) -> None:
    """Chunks whose rows are all keyed and sent take the column-wise path, the others the
    loop; both keep the same rows as the rules applied one row at a time, in source order."""
    with StateStore(tmp_path / "state.db") as store:
        fold = Journal(store, "p")
        scope = store.scope_id("p", "m")
        assert scope is not None
        outcomes = [
            ChunkResult(i + 2, status, rid, "boom" if err else None)
            for i, (status, rid, _, err) in enumerate(drawn)
        ]
        journaled: Journaled = {i + 2: (key, f"h{i}") for i, (_, _, key, _) in enumerate(drawn)}
        rnd.shuffle(outcomes)  # type: ignore[attr-defined]
        aligned = _align(journaled, [o.source_row for o in outcomes])
        fold.ledger_fold.keep("r", "s", "m", 1, outcomes, aligned)
        rows, in_order = fold.ledger_fold._to_fold.get(("r", "s", "m"), ([], True))
        assert in_order
        assert fold.unfolded_rows == len(rows)
        assert rows == _kept_row_by_row(scope, outcomes, journaled, store.run_number("r"))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(st.lists(st.sampled_from(["created", "updated"]), min_size=1, max_size=30))
def test_a_chunk_all_keyed_and_sent_keeps_every_row(tmp_path: Path, statuses: list[str]) -> None:
    with StateStore(tmp_path / "state.db") as store:
        fold = Journal(store, "p")
        scope = store.scope_id("p", "m")
        outcomes = [ChunkResult(i, s, 100 + i) for i, s in enumerate(statuses)]
        journaled: Journaled = {i: (f"k{i}", f"h{i}") for i in range(len(statuses))}
        fold.ledger_fold.keep(
            "r", "s", "m", 1, outcomes, _align(journaled, list(range(len(statuses))))
        )
        rows, _ = fold.ledger_fold._to_fold[("r", "s", "m")]
        assert [r[:5] for r in rows] == [
            (scope, f"k{i}", 100 + i, pack_hash(f"h{i}"), STATUS_CODES[s])
            for i, s in enumerate(statuses)
        ]


def _prepared(n: int, key: str | None) -> PreparedRow:
    return PreparedRow(SourceRow("in.csv", n, {}), RowStatus.VALID, {"name": "x"}, key=key)


keys = st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=20)


@given(keys, st.data())
def test_journal_rows_and_chunk_results_are_the_row_by_row_ones(
    drawn: list[str | None], data: st.DataObject
) -> None:
    rows = [_prepared(i + 2, k) for i, k in enumerate(drawn)]
    hashes = {id(r): f"h{i}" for i, r in enumerate(rows) if i % 3}
    safe = data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    expected = [
        JournalRow(r.source.source_row, r.key, hashes.get(id(r)), s)
        for r, s in zip(rows, safe, strict=True)
    ]
    made = journal_rows(rows, hashes, safe)
    assert made == expected and all(type(r) is JournalRow for r in made)
    statuses = data.draw(st.lists(st.sampled_from(list(RowStatus)), min_size=len(rows)))
    results = [EntryResult(s, i, f"e{i}" if i % 2 else None) for i, s in enumerate(statuses)]
    results = results[: len(rows)]
    merged = RowStatus.MERGED
    assert chunk_results(rows, results) == [
        ChunkResult(
            r.source.source_row,
            RowStatus.FAILED.value if res.status is merged else res.status.value,
            res.record_id,
            res.error,
        )
        for r, res in zip(rows, results, strict=True)
    ]
    outcomes = chunk_results(rows, results)
    journaled = {j.source_row: (j.key, j.input_hash) for j in made}
    keys, hashes = _align(journaled, [o.source_row for o in outcomes])
    assert outcome_rows(outcomes, keys, hashes) == [
        (o.source_row, *journaled[o.source_row], str(o.status), o.record_id, o.error)
        for o in outcomes
    ]
    assert as_list(made, JournalRow) == made
    plain = [(j.source_row, j.key, j.input_hash) for j in made]  # resend_safe: its default
    assert as_list(plain, JournalRow) == [j._replace(resend_safe=True) for j in made]

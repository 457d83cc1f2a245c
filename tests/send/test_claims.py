"""Merges found from the answers (recordsync.send.claims): a row that lands on a record id
another row of the step or another ledger key holds is merged, not updated."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.send.claims import RecordClaims

CREATED, UPDATED, MERGED = RowStatus.CREATED, RowStatus.UPDATED, RowStatus.MERGED


def row(n: int, key: str | None) -> PreparedRow:
    return PreparedRow(SourceRow("c.csv", n, {}), RowStatus.VALID, {"name": key}, key=key)


def test_a_second_row_on_the_same_record_is_merged_naming_the_first() -> None:
    claims = RecordClaims(expected=False)
    first = claims.settle([row(2, "name:A")], [EntryResult(CREATED, 7)])
    later = claims.settle(
        [row(3, "name:B"), row(4, "name:C")], [EntryResult(UPDATED, 7), EntryResult(CREATED, 8)]
    )
    assert first == [EntryResult(CREATED, 7)]
    assert [r.status for r in later] == [MERGED, CREATED]
    assert later[0].record_id == 7
    assert later[0].error is not None and "which row 2 already holds" in later[0].error


def test_the_same_row_or_key_again_is_its_own_record() -> None:
    claims = RecordClaims(expected=False)
    claims.settle([row(2, "name:A")], [EntryResult(CREATED, 7)])
    again = claims.settle([row(2, "name:A")], [EntryResult(UPDATED, 7)])
    assert again == [EntryResult(UPDATED, 7)]


def test_a_record_another_ledger_key_holds_and_merges_declared_expected() -> None:
    asked: list[list[tuple[str | None, int]]] = []

    def owners(pairs: list[tuple[str | None, int]]) -> dict[int, list[str]]:
        asked.append(pairs)
        return {7: ["name:New", "name:Old"]}

    held = RecordClaims(expected=False, other_owners=owners)
    (res,) = held.settle([row(5, "name:New")], [EntryResult(UPDATED, 7)])
    assert res.status is MERGED and "ledger key 'name:Old'" in (res.error or "")
    assert asked == [[("name:New", 7)]]
    fine = RecordClaims(expected=True, other_owners=owners)
    assert fine.settle([row(5, "name:New")], [EntryResult(UPDATED, 7)]) == [EntryResult(UPDATED, 7)]
    failed = [EntryResult(RowStatus.FAILED, None, "x")]
    assert held.settle([row(6, "name:X")], failed) == failed


def test_the_holder_answered_in_the_same_chunk_keeps_its_record() -> None:
    claims = RecordClaims(expected=False, other_owners=lambda pairs: {7: ["name:A"]})
    out = claims.settle(
        [row(2, "name:B"), row(3, "name:A")], [EntryResult(UPDATED, 7), EntryResult(UPDATED, 7)]
    )
    assert [r.status for r in out] == [MERGED, UPDATED]


def test_claims_written_to_disk_give_the_same_answers() -> None:
    """A block of 2 records: most claims are looked up in the temporary database."""
    chunks = [
        ([row(2, "name:A"), row(3, "name:B")], [EntryResult(CREATED, 7), EntryResult(CREATED, 8)]),
        ([row(4, "name:C"), row(5, "name:D")], [EntryResult(CREATED, 9), EntryResult(CREATED, 3)]),
        ([row(6, "name:E"), row(2, "name:A")], [EntryResult(UPDATED, 7), EntryResult(UPDATED, 7)]),
        ([row(7, "name:F"), row(8, "name:G")], [EntryResult(UPDATED, 3), EntryResult(CREATED, 11)]),
    ]
    spilled, in_memory = RecordClaims(expected=False, block=2), RecordClaims(expected=False)
    outs = [(spilled.settle(r, e), in_memory.settle(r, e)) for r, e in chunks]
    assert all(a == b for a, b in outs)
    assert spilled._rows.spilled >= 4
    assert [r.status for r in outs[2][0]] == [MERGED, UPDATED]
    assert [r.status for r in outs[3][0]] == [MERGED, CREATED]
    assert "which row 5 already holds" in (outs[3][0][0].error or "")


ANSWER = st.tuples(
    st.integers(2, 9),  # source row
    st.sampled_from([None, "name:A", "name:B"]),
    st.sampled_from([CREATED, CREATED, UPDATED, RowStatus.FAILED]),
    st.one_of(st.integers(1, 30), st.none()),
)


@settings(max_examples=80, deadline=None)
@given(chunks=st.lists(st.lists(ANSWER, max_size=6), max_size=8), block=st.integers(1, 4))
def test_claims_are_what_the_rule_says_row_by_row_whichever_way_a_chunk_is_settled(
    chunks: list[list[tuple[int, str | None, RowStatus, int | None]]], block: int
) -> None:
    """Chunks of records just created are settled column-wise, the others row by row (in
    memory or on disk): the outcome of each row is the rule's, applied one row at a time."""
    claims = RecordClaims(expected=False, block=block)
    held: dict[int, tuple[int, str | None]] = {}
    for chunk in chunks:
        rows = [row(n, key) for n, key, _, _ in chunk]
        results = [EntryResult(status, rid) for _, _, status, rid in chunk]
        expected = []
        for n, key, status, rid in chunk:
            first = held.get(rid) if rid is not None and status in (CREATED, UPDATED) else None
            if first is not None and (first[0] == n or (first[1] is not None and first[1] == key)):
                first = None  # the same row or key again
            if first is None:
                if rid is not None and status in (CREATED, UPDATED):
                    held.setdefault(rid, (n, key))
                expected.append((status, rid))
            else:
                expected.append((MERGED, rid))
        assert [(r.status, r.record_id) for r in claims.settle(rows, results)] == expected
    claims.close()

"""The sampler of what a run wrote: uniform reservoirs, later writes to a sampled record,
rows found unchanged, the record ids kept for the skill."""

from __future__ import annotations

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import Item, PreparedRow, RowStatus, SourceRow, UnchangedBlock
from recordsync.run.written import MAX_CHANGED_IDS, WrittenRecords


def row(line: int, name: str, status: RowStatus = RowStatus.VALID) -> PreparedRow:
    payload = {"name": name, "fields": {"job_title": name}}
    return PreparedRow(SourceRow("f.csv", line, {}), status, payload)


def test_a_later_row_written_to_a_sampled_record_is_expected_on_top() -> None:
    w = WrittenRecords({"s": 10}, seed=1)
    first = [row(2, "a"), row(3, "b")]
    w.settled(
        "s",
        list(first),
        [EntryResult(RowStatus.CREATED, 1), EntryResult(RowStatus.CREATED, 2)],
        None,
    )
    w.settled("s", [row(4, "c")], [EntryResult(RowStatus.UPDATED, 1)], None)
    by_id = {s.record_id: s for s in w.sample("s")}
    assert set(by_id) == {1, 2}  # one entry per record
    # record 1: row 2 with row 4's values on top, or row 4 itself (its last write)
    expected = {(2, ("c",)), (4, ())}
    assert (by_id[1].source_row, tuple(p["name"] for p in by_id[1].later)) in expected
    assert by_id[2].later == []
    rows = [row(5, "x"), row(6, "y"), row(7, "z")]
    w2 = WrittenRecords({"s": 3}, seed=2)  # one chunk: a row written later in it comes after
    w2.settled("s", rows, [EntryResult(RowStatus.CREATED, 9)] * 3, None)
    (only,) = w2.sample("s")
    after = {5: ["y", "z"], 6: ["z"], 7: []}[only.source_row]
    assert [p["name"] for p in only.later] == after


def test_rows_found_unchanged_are_sampled_with_their_record_ids() -> None:
    w = WrittenRecords({"s": 4}, seed=3)
    block = UnchangedBlock(
        "f.csv", [10, 11, 12, 15], [0, 1, 2, 3], ["k"] * 4, [None] * 4, [None] * 4, [7, None, 9, 8]
    )
    block.cells = {10: "cells of 10", 11: "cells of 11", 12: "cells of 12"}  # 15: not kept
    unchanged = row(13, "d", RowStatus.UNCHANGED)
    rows: list[Item] = [block, unchanged, row(14, "e")]
    ids = {id(unchanged): 11}
    w.settled("s", rows, [EntryResult(RowStatus.CREATED, 20)], lambda r: ids.get(id(r)))
    got = {(s.source_row, s.record_id, s.status, s.cells) for s in w.sample("s")}
    # half written (1 there is), the rest unchanged: rows with cells, or mapped (13);
    # line 11 has no record id, line 15 no cells: never sampled
    assert got == {
        (14, 20, "created", None),
        (10, 7, "unchanged", "cells of 10"),
        (12, 9, "unchanged", "cells of 12"),
        (13, 11, "unchanged", None),
    }


def test_record_ids_kept_for_the_skill_are_capped() -> None:
    w = WrittenRecords({}, seed=1)
    results = [EntryResult(RowStatus.CREATED, i) for i in range(MAX_CHANGED_IDS + 50)]
    results[3] = EntryResult(RowStatus.FAILED, None, "no")
    w.settled("s", [], results, None)
    assert len(w.changed["s"]["created"]) == MAX_CHANGED_IDS and 3 not in w.changed["s"]["created"]
    assert w.sample("s") == []

"""The database mode's step (recordsync.nightly.pushdown) streams the diff's rows: each list
of prepared rows read from the diff is handed on before the next one is read, so the rows
alive at once are a list's (``sizes.SLICE_ROWS``), whatever the number of changed rows."""

from __future__ import annotations

from collections.abc import Iterator

from recordsync.core.model import Blocks, PreparedRow, RowStatus, SourceRow
from recordsync.nightly.pushdown import Pushdown
from recordsync.nightly.unchanged_rows import UnchangedRows


def _diff_rows(lists: int, size: int, read: list[int]) -> Blocks[PreparedRow]:
    """``lists`` lists of ``size`` prepared rows, as the prepare path gives a diff's rows;
    ``read`` counts the lists made so far."""

    def made() -> Iterator[list[PreparedRow]]:
        for i in range(lists):
            read.append(i)
            yield [
                PreparedRow(SourceRow("diff", i * size + j + 1, None, None), RowStatus.VALID)
                for j in range(size)
            ]

    return Blocks(made())


def test_the_diffs_rows_are_handed_on_a_list_at_a_time() -> None:
    push = Pushdown.__new__(Pushdown)  # no database: the diff's rows as prepared
    push.rows_read = push.unchanged = 0
    read: list[int] = []
    rows = _diff_rows(50, 100, read)
    seen = 0
    ahead = []
    for part in push._lists(rows, None, UnchangedRows(0)):
        seen += 1
        ahead.append(len(read) - seen)  # lists read from the diff and not handed on yet
        assert len(part) == 100
    assert seen == 50 and push.rows_read == 5000
    assert max(ahead) == 0, ahead

"""The hook's row side takes a prepared stream a list at a time (nightly/hook.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.state.conftest import prepared

from recordsync.core.model import Blocks, Item, RowStatus, StepPlan, UnchangedBlock
from recordsync.nightly.opening import open_state
from recordsync.tuning import sizes


def _items() -> list[list[Item]]:
    """Lists as a prepared stream makes them: rows only, and rows around unchanged blocks."""
    block = UnchangedBlock("c.csv", [20, 21], np.arange(2), ["u1", "u2"], *([None] * 2,) * 3)
    return [
        [prepared(i, f"k{i}") for i in range(2, 9)],
        [prepared(9, None), prepared(10, "k10", status=RowStatus.INVALID), block],
        [prepared(i, f"k{i}") for i in range(30, 34)],
    ]


def _classified(db: Path, rows: object) -> list[tuple[str, int, str]]:
    plan = StepPlan("deals", "deals", "deals", lambda: [])
    with open_state("p", db, "r1") as hook:
        out = [
            (type(i).__name__, int(i.source_rows[0]), "unchanged")
            if isinstance(i, UnchangedBlock)
            else ("row", i.source.source_row, i.status.value)
            for i in hook.classify(plan, rows)  # type: ignore[arg-type]
        ]
        hook.finish("finished")
    return out


def test_lists_are_classified_as_their_rows_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizes, "CLASSIFY_ROWS", 3)  # lists cut in groups
    one_by_one = _classified(tmp_path / "a.db", iter([i for b in _items() for i in b]))
    in_lists = _classified(tmp_path / "b.db", Blocks(iter(_items())))
    assert in_lists == one_by_one
    assert len(in_lists) == 14 and ("row", 10, "invalid") in in_lists


def test_a_list_is_taken_only_when_the_stream_gets_to_it(tmp_path: Path) -> None:
    pulled: list[int] = []

    def lists() -> Iterator[list[Item]]:
        for n, items in enumerate(_items()):
            pulled.append(n)
            yield items

    plan = StepPlan("deals", "deals", "deals", lambda: [])
    with open_state("p", tmp_path / "s.db", "r1") as hook:
        stream = iter(hook.classify(plan, Blocks(lists())))
        assert next(stream).source.source_row == 2  # type: ignore[union-attr]
        assert pulled == [0]
        assert len(list(stream)) == 13 and pulled == [0, 1, 2]
        hook.finish("finished")

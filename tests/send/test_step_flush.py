"""A nightly run's few changed rows fill whole chunks: rows found unchanged are buffered
apart from prepared rows (send/step.py, ``sizes.STEP_FLUSH_UNCHANGED_ROWS``)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recordsync.send import step
from recordsync.tuning import sizes

from .support import people_project

ROWS, EVERY = 6000, 30  # 200 rows changed, one in 30


def _change_every(path: Path, every: int) -> set[int]:
    """Rename every ``every``-th person; the lines changed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    changed = set()
    for i in range(1, len(lines), every):
        lines[i] = lines[i].replace("Person ", "Renamed ")
        changed.add(i + 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def _chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the rows sent by each chunk queued from now on."""
    sent: list[int] = []

    class Counted(step.QueuedChunk):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if self.to_send:
                sent.append(len(self.to_send))

    monkeypatch.setattr(step, "QueuedChunk", Counted)
    return sent


def _results(project: Path, before: set[Path]) -> list[dict[str, str]]:
    """The results of the run whose report is the one folder not in ``before`` (run ids
    begin with their second: two runs in one second do not sort by name in run order)."""
    (report,) = set((project / "reports").iterdir()) - before
    with open(report / "results.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("unchanged_rows", [None, 1000])
def test_the_changed_rows_of_a_nightly_run_fill_whole_chunks(
    project: Path,
    cli: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
    unchanged_rows: int | None,
) -> None:
    people_project(project, ROWS, name="flush", send={"chunk_size": 100, "canary_chunk_size": 100})
    assert cli("run", "run.yaml", "--quiet") == 0
    changed = _change_every(project / "people.csv", EVERY)
    monkeypatch.setattr(sizes, "STEP_FLUSH_ROWS", 500)  # a changed row per 30: 17 of them
    if unchanged_rows is not None:
        monkeypatch.setattr(sizes, "STEP_FLUSH_UNCHANGED_ROWS", unchanged_rows)
    sent = _chunks(monkeypatch)
    before = set((project / "reports").iterdir())
    assert cli("run", "run.yaml", "--quiet", "--list-unchanged") == 0
    assert sum(sent) == len(changed) == ROWS // EVERY
    if unchanged_rows is None:  # nothing but a chunk's worth of changed rows cuts a chunk
        assert sent == [100, 100]
    else:  # about 1,000 rows found unchanged cut one too (a changed row per 29 of them)
        assert len(sent) >= 5 and max(sent) < 100, sent
    results = _results(project, before)
    assert [int(r["source_row"]) for r in results] == list(range(2, ROWS + 2))  # in order
    assert {int(r["source_row"]) for r in results if r["status"] == "updated"} == changed

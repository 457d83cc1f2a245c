"""A resumed run finds the rows its dead attempt sent by key and content, not by line: the
source changed and re-exported in another order after the kill is sent in full, every
record ends holding its row's values, and the report says the source changed. The kill is
deterministic: the runner stops at a chosen chunk's acknowledgement (a BaseException, which
nothing catches: the run stays `running` in the journal, as after a kill -9)."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

import pytest

from recordsync.nightly.hook import StateHook
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import Journal, StateStore

from .support import all_records, served, target

ROWS = 1000


class Killed(BaseException):
    """Stands for kill -9: not an Exception, so no handler of the runner catches it."""


def export(tmp: Path, version: int, order: list[int]) -> None:
    with open(tmp / "c.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Email", "Score"])
        for i in order:
            w.writerow([f"Ann{i} v{version}", f"ann.{i}@resume.example", version * 10 + i % 7])


def pipeline(tmp: Path) -> Path:
    (tmp / "c.yaml").write_text(
        "object_type: contacts\nsource: {path: c.csv}\nname: Name\nmatch_by: [email]\n"
        "fields:\n  email: Email\n  lead_score: Score\n"
    )
    path = tmp / "resume.yaml"
    path.write_text("steps: [c.yaml]\nsend: {chunk_size: 100}\n")
    return path


def request(tmp: Path, path: Path) -> RunRequest:
    return RunRequest(
        path,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
    )


def kill_at_ack(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """The n-th chunk's answer is in but never acknowledged: the run dies there."""
    real = StateHook.ack
    seen = [0]

    def ack(self: StateHook, *args: Any) -> None:
        seen[0] += 1
        if seen[0] == n:
            raise Killed
        real(self, *args)

    monkeypatch.setattr(StateHook, "ack", ack)


@pytest.mark.parametrize("again", [False, True])
def test_a_resume_after_the_source_changed_and_was_reordered_sends_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, again: bool
) -> None:
    path = pipeline(tmp_path)
    export(tmp_path, 1, list(range(ROWS)))
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, path), target=target(url))
        assert first.exit_code == 0
        export(tmp_path, 2, list(range(ROWS)))  # every row changed
        kill_at_ack(monkeypatch, 5)
        with pytest.raises(Killed):
            run_pipeline(request(tmp_path, path), target=target(url))
        monkeypatch.undo()
        order = list(range(ROWS))
        random.Random(17).shuffle(order)
        export(tmp_path, 2, order)  # the same rows, in another order
        if again:  # and changed once more after the kill, for some of them
            export(tmp_path, 2, order)
            text = (tmp_path / "c.csv").read_text().replace(" v2,", " v3,", ROWS // 3)
            (tmp_path / "c.csv").write_text(text)
        resumed = run_pipeline(request(tmp_path, path), target=target(url))
        held = all_records(url, "contacts")
    assert resumed.summary["run_id"] != first.summary["run_id"]
    with StateStore(tmp_path / "state.db") as store:
        run = Journal(store, "resume").run(resumed.summary["run_id"])
        assert run is not None and run.attempts == 2
    assert resumed.exit_code == 0 and resumed.summary["accounting_ok"]
    step = resumed.summary["steps"][0]
    assert step["rows_read"] == ROWS and step["created"] == 0
    # every record holds its row's values: nothing reported updated with old values
    with open(tmp_path / "c.csv", newline="", encoding="utf-8") as f:
        want = {r["Email"]: (r["Name"], int(r["Score"])) for r in csv.DictReader(f)}
    got = {r["email"]: (r["name"], r.get("lead_score")) for r in held}
    assert len(held) == ROWS and got == want
    assert "the source changed since the interrupted attempt" in str(
        step["source_changed_since_interrupted_attempt"]
    )
    report = (resumed.report_dir / "report.md").read_text()
    assert "Step c (resumed): the source changed since the interrupted attempt" in report

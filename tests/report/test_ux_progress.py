"""The plain (cron) progress line of a finished step shows every outcome."""

from __future__ import annotations

import io

from recordsync.core.model import RowStatus
from recordsync.report.progress import PlainProgress
from recordsync.report.tally import StepTally


def test_step_line_shows_unchanged_and_duplicate() -> None:
    out = io.StringIO()
    t = StepTally("contacts", "contacts.yaml", "contacts", read=201)
    t.outcomes[RowStatus.UNCHANGED] = 198
    t.outcomes[RowStatus.INVALID] = 2
    t.outcomes[RowStatus.DUPLICATE] = 1
    t.outcomes[RowStatus.MERGED] = 1
    t.merge_held = 1
    PlainProgress(out).step_finished(t)
    line = out.getvalue()
    assert "step contacts done: read 201, unchanged 198, sent 0," in line
    assert "invalid 2, duplicate 1, merged 1 (" in line


def test_step_line_never_counts_rows_not_sent_as_sent() -> None:
    out = io.StringIO()
    t = StepTally("contacts", "contacts.yaml", "contacts", read=5, sent=5)
    t.outcomes[RowStatus.CREATED] = 2
    t.outcomes[RowStatus.FAILED] = 3
    t.not_sent = 3  # the run stopped: three rows were reported failed without being sent
    PlainProgress(out).step_finished(t)
    line = out.getvalue()
    assert "sent 2, created 2, updated 0, failed 3 (3 not sent)," in line

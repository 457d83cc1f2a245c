"""A report's "Next steps" fit what stopped the run: one mapping of error → next step
(report/next_steps.py), and ``recordsync retry`` only for rows a resend can fix."""

from __future__ import annotations

from typing import Any

import pytest

from recordsync.core.errors import (
    ApiError,
    AuthError,
    ConfigError,
    FatalApiError,
    ObjectTypeNotFound,
    RecordsyncError,
    RetriableApiError,
    RunAborted,
    SourceError,
)
from recordsync.core.model import RowStatus
from recordsync.core.secret import Secret
from recordsync.report.html import render_html
from recordsync.report.markdown import render_report
from recordsync.report.next_steps import describe_stop, next_steps
from recordsync.report.tally import StepTally
from recordsync.run.target import Target

from .support import summary_of

KEY = "sk_live_never_shown_0123456789"
STAGING = Target("https://crm.example/api", Secret(KEY), "--profile staging", "env STAGING_KEY")


def _aborted_after_a_send() -> RunAborted:
    cause = SourceError("byte 0xff is not UTF-8", file="more.csv", line=12, hint="save as UTF-8")
    aborted = RunAborted("run aborted after 2 chunk(s) were sent: ...")
    aborted.__cause__ = cause
    return aborted


@pytest.mark.parametrize(
    ("error", "kind", "says"),
    [
        (AuthError("Invalid API key", status=401), "auth", "env STAGING_KEY"),
        (ObjectTypeNotFound("no such object type", status=404), "object_type", "`object_type`"),
        (RetriableApiError("connection refused"), "unreachable", "check the base URL"),
        (RetriableApiError("Service unavailable", status=503), "unavailable", "HTTP 503"),
        (FatalApiError("Bad request", status=400), "service", "resending cannot fix it"),
        (ApiError("odd answer", status=418), "service", "HTTP 418"),
        (ConfigError("unknown field 'x'", file="deals.yaml", key="fields.x"), "config", "deals"),
        (SourceError("missing", file="people.csv", hint="check the path"), "config", "the path"),
        (_aborted_after_a_send(), "config", "fix more.csv:12: save as UTF-8"),
        (RunAborted("circuit breaker: 9 of 10 rows sent failed"), "breaker", "max_failure_rate"),
        (
            RunAborted("circuit breaker: 51 created, more than max_creates=50"),
            "breaker",
            "match_by",
        ),
        (RunAborted("pipeline is running", hint="wait for it to finish"), "aborted", "wait for"),
        (RecordsyncError("something else"), "error", "see the error above"),
    ],
)
def test_every_branch_of_the_error_tree_has_its_own_next_step(
    error: RecordsyncError, kind: str, says: str
) -> None:
    stop = describe_stop(error, STAGING)
    assert stop is not None
    assert (stop["kind"], stop["error"]) == (kind, type(error).__name__)
    assert says in stop["next_step"]
    assert KEY not in stop["next_step"] and "retry" not in stop["next_step"]


def test_a_wrong_key_names_where_the_key_came_from_never_the_key() -> None:
    stop = describe_stop(AuthError("Invalid API key", status=401), STAGING)
    assert stop is not None
    assert stop["next_step"] == (
        "fix the API key: it comes from env STAGING_KEY (target from --profile staging): set "
        "it to a valid key for https://crm.example/api; then run again"
    )
    assert describe_stop(None, STAGING) is None


def test_an_unreachable_service_names_the_base_url_and_where_it_came_from() -> None:
    stop = describe_stop(RetriableApiError("connection refused"), STAGING)
    assert stop is not None
    assert "https://crm.example/api (target from --profile staging)" in stop["next_step"]


def _tally(**outcomes: int) -> StepTally:
    t = StepTally("contacts", "contacts.yaml", "contacts")
    for status, n in outcomes.items():
        if status in ("not_sent", "rejected"):
            setattr(t, status, n)
        else:
            t.outcomes[RowStatus(status)] = n
    t.read = sum(t.outcomes.values())
    t.sent = t.read - t.outcomes[RowStatus.INVALID]
    return t


def _summary(tally: StepTally, stop: RecordsyncError | None = None, **meta: Any) -> Any:
    summary = summary_of([tally]) | meta
    summary["stop"] = describe_stop(stop, STAGING)
    return summary


def _both(summary: Any, tally: StepTally) -> tuple[str, str]:
    return render_report(summary, [tally]), render_html(summary, [tally])


def test_a_run_stopped_by_a_wrong_key_says_fix_the_key_and_never_retry() -> None:
    t = _tally(failed=5, not_sent=5)
    summary = _summary(t, AuthError("Invalid API key", status=401))
    items = next_steps(summary)
    assert items[0].startswith("fix the API key: it comes from env STAGING_KEY")
    assert "5 row(s) were not sent because the run stopped first" in items[-1]
    md, page = _both(summary, t)
    assert "recordsync retry" not in md + page
    assert "- fix the API key: it comes from env STAGING_KEY" in md
    assert "<li>fix the API key: it comes from env STAGING_KEY" in page
    assert KEY not in md + page


def test_transient_failures_and_in_doubt_rows_are_retried() -> None:
    for t in (_tally(failed=2), _tally(in_doubt=1, created=1)):
        md, page = _both(_summary(t), t)
        assert "`recordsync retry reports/r1`" in md
        assert "<code>recordsync retry reports/r1</code>" in page


def test_rows_only_a_fix_can_help_are_never_retried() -> None:
    cases = [
        (_tally(failed=2, rejected=2), None),  # values the service rejected
        (_tally(invalid=3, created=1), None),
        (_tally(failed=4, rejected=1, not_sent=3), RunAborted("circuit breaker: 4 of 5 ...")),
        (_tally(failed=4, not_sent=4), RetriableApiError("connection refused")),
    ]
    for t, stop in cases:
        md, page = _both(_summary(t, stop), t)
        assert "recordsync retry" not in md + page, (t, stop)


def test_the_other_failures_of_a_stopped_run_are_still_retried() -> None:
    t = _tally(failed=5, not_sent=3)  # two rows sent and failed (a timeout), three not sent
    md, _ = _both(_summary(t, RunAborted("cannot write the state store", hint="free space")), t)
    assert "- free space\n" in md
    assert "resend the other failed and in-doubt rows (transient errors" in md


def test_a_dry_run_never_suggests_a_retry() -> None:
    t = _tally(failed=4, not_sent=4)
    summary = _summary(t, RetriableApiError("connection refused"), dry_run=True)
    md, page = _both(summary, t)
    assert "recordsync retry" not in md + page
    assert "run again and they are checked" in md


def test_a_stop_with_no_row_not_ok_still_says_what_to_do() -> None:
    t = _tally()
    md, page = _both(_summary(t, ObjectTypeNotFound("no such type", status=404)), t)
    assert "## Next steps" in md and "<h2>Next steps</h2>" in page
    assert "fix `object_type` in the step's mapping" in md


def test_report_md_and_report_html_list_the_same_next_steps() -> None:
    t = _tally(failed=3, rejected=1, invalid=1, in_doubt=1, created=2, not_sent=1)
    t.outcomes[RowStatus.MERGED] = 1
    summary = _summary(t, RunAborted("circuit breaker: 3 of 6 rows sent failed"))
    items = next_steps(summary)
    md, page = _both(summary, t)
    md_items = md.split("## Next steps\n\n", 1)[1].strip().splitlines()
    assert md_items == [f"- {i}" for i in items]
    assert page.split("<h2>Next steps</h2>", 1)[1].count("<li>") == len(items)

"""Batch answers are checked before they are trusted."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import RowStatus
from recordsync.reconcile import batch
from recordsync.reconcile.batch import Unreconciled, reconcile_batch


def body(results: list[dict[str, Any]], **summary: int) -> dict[str, Any]:
    counted = {"total": len(results), "created": 0, "updated": 0, "failed": 0}
    for r in results:
        counted[r["status"]] = counted.get(r["status"], 0) + 1
    counted.update(summary)
    return {"results": results, "summary": counted}


def test_results_map_back_by_position_with_extra_keys_ignored() -> None:
    answer = body(
        [
            {"id": 4, "status": "created", "extra": True},
            {"id": "5", "status": "updated"},
            {
                "id": None,
                "status": "failed",
                "error": "Validation failed: email: invalid email format",
            },
        ]
    )
    answer["summary"]["skipped"] = 0
    answer["request_id"] = "abc"
    got = reconcile_batch(3, answer)
    assert [(r.status, r.record_id) for r in got] == [
        (RowStatus.CREATED, 4),
        (RowStatus.UPDATED, 5),
        (RowStatus.FAILED, None),
    ]
    assert got[2].error == "Validation failed: email: invalid email format"


@pytest.mark.parametrize(
    ("answer", "sent", "reason"),
    [
        (body([{"id": 1, "status": "created"}]), 2, "1 results for 2 entries sent"),
        (body([{"id": 1, "status": "created"}], created=0), 1, "created=0 but the results count 1"),
        (body([{"id": 1, "status": "created"}], total=3), 1, "total=3"),
        (body([{"id": 1, "status": "skipped"}]), 1, "unknown status 'skipped'"),
        (body([{"status": "created"}]), 1, "has no record id"),
        ({"results": [{"id": 1, "status": "created"}]}, 1, "no 'summary'"),
        ([], 0, "not a JSON object"),
        ({"results": ["x"], "summary": {"total": 1}}, 1, "result 0 is not an object"),
    ],
)
def test_mismatches_are_unreconciled(answer: Any, sent: int, reason: str) -> None:
    with pytest.raises(Unreconciled, match=reason):
        reconcile_batch(sent, answer)


def test_failed_result_without_error_gets_one() -> None:
    got = reconcile_batch(1, body([{"id": None, "status": "failed"}]))
    assert got[0].error == "failed (no error given)"


_result = st.fixed_dictionaries(
    {"status": st.sampled_from(["created", "updated", "created", "failed", "merged"])},
    optional={
        "id": st.one_of(st.integers(1, 10**12), st.just(True), st.just("42"), st.none()),
        "error": st.just("boom"),
        "extra": st.integers(),
    },
)


@settings(max_examples=300)
@given(
    results=st.lists(st.one_of(_result, _result, st.just("not an object")), max_size=6),
    skew=st.sampled_from([None, "total", "created", "updated", "failed"]),
    sent_delta=st.sampled_from([0, 0, 0, 1]),
)
def test_the_quick_check_of_common_answers_agrees_with_the_full_one(
    results: list[Any], skew: str | None, sent_delta: int
) -> None:
    """Answers where every entry was applied take a quicker path: for any answer it gives
    what the result-by-result check gives, or defers to it."""
    statuses = [r.get("status") for r in results if isinstance(r, dict)]
    summary: dict[str, Any] = {"total": len(results)}
    summary.update({s: statuses.count(s) for s in ("created", "updated", "failed")})
    if skew is not None:
        summary[skew] += 1
    body = {"results": results, "summary": summary}

    def outcome() -> Any:
        try:
            return reconcile_batch(len(results) + sent_delta, body)
        except Unreconciled as exc:
            return str(exc)

    quick = outcome()
    with patch.object(batch, "_all_applied", lambda *a: None):
        assert outcome() == quick


def test_an_answer_where_every_entry_was_applied_takes_the_quick_check() -> None:
    results = [{"status": "created", "id": 7}, {"status": "updated", "id": 8, "x": 1}]
    summary = {"total": 2, "created": 1, "updated": 1, "failed": 0, "extra": "ignored"}
    quick = batch._all_applied(results, summary)
    assert quick == [(RowStatus.CREATED, 7, None), (RowStatus.UPDATED, 8, None)]
    assert reconcile_batch(2, {"results": results, "summary": summary}) == quick


def test_rows_after_a_failed_one_are_still_read() -> None:
    answer = body([{"status": "failed", "error": "bad"}, {"id": 5, "status": "created"}])
    assert [(r.status, r.record_id) for r in reconcile_batch(2, answer)] == [
        (RowStatus.FAILED, None),
        (RowStatus.CREATED, 5),
    ]


@pytest.mark.parametrize(
    ("sent", "answer", "why"),
    [
        (1, [], "answer is not a JSON object (got list)"),
        (1, {"summary": {}}, "answer has no 'results' list"),
        (1, {"results": [{"id": 1, "status": []}]}, "result 0 has unknown status []"),
        (1, {"results": [{"status": "failed"}]}, "answer has no 'summary' object"),
        (
            2,
            body([{"status": "failed"}, {"status": "failed"}], total=3, failed=True),
            "summary does not match the results: total=3 but the results count 2,"
            " failed=None but the results count 2",
        ),
        (
            1,
            body([{"id": 1, "status": "created"}], created=True),
            "summary does not match the results: created=None but the results count 1",
        ),
    ],
)
def test_answers_that_do_not_add_up_say_how(sent: int, answer: Any, why: str) -> None:
    with pytest.raises(Unreconciled) as caught:
        reconcile_batch(sent, answer)
    assert str(caught.value) == why

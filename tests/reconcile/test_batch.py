"""Batch answers are checked before they are trusted."""

from __future__ import annotations

from typing import Any

import pytest

from recordsync.model import RowStatus
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

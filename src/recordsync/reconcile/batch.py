"""Check a batch answer before trusting it, and map its results back to entries by position.

A 2xx batch answer is accepted only when it has exactly one result per entry sent, every
result has a known status, and ``summary`` equals the counts of the results. Anything else
marks the chunk *unreconciled*: its rows become ``in_doubt`` with the reason, never silently
accepted. Unknown extra keys (in the body, the results or the summary) are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recordsync.model import RowStatus

_STATUSES = {"created": RowStatus.CREATED, "updated": RowStatus.UPDATED, "failed": RowStatus.FAILED}


class Unreconciled(Exception):
    """The batch answer does not match what was sent."""


@dataclass(frozen=True, slots=True)
class EntryResult:
    """The outcome of one entry of a batch."""

    status: RowStatus
    record_id: int | None = None
    error: str | None = None


def _record_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _count(summary: dict[str, Any], key: str) -> int | None:
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def reconcile_batch(sent: int, body: Any) -> list[EntryResult]:
    """The per-entry results of a batch answer, in input order; raise Unreconciled if the
    answer does not account for exactly ``sent`` entries."""
    if not isinstance(body, dict):
        raise Unreconciled(f"answer is not a JSON object (got {type(body).__name__})")
    results = body.get("results")
    if not isinstance(results, list):
        raise Unreconciled("answer has no 'results' list")
    if len(results) != sent:
        raise Unreconciled(f"{len(results)} results for {sent} entries sent")
    out: list[EntryResult] = []
    for i, item in enumerate(results):
        if not isinstance(item, dict):
            raise Unreconciled(f"result {i} is not an object")
        status = _STATUSES.get(str(item.get("status")))
        if status is None:
            raise Unreconciled(f"result {i} has unknown status {item.get('status')!r}")
        record_id = _record_id(item.get("id"))
        if status is RowStatus.FAILED:
            err = item.get("error")
            out.append(EntryResult(status, None, str(err) if err else "failed (no error given)"))
        else:
            if record_id is None:
                raise Unreconciled(f"result {i} is {status.value} but has no record id")
            out.append(EntryResult(status, record_id))
    summary = body.get("summary")
    if not isinstance(summary, dict):
        raise Unreconciled("answer has no 'summary' object")
    counted = {
        "total": len(out),
        "created": sum(r.status is RowStatus.CREATED for r in out),
        "updated": sum(r.status is RowStatus.UPDATED for r in out),
        "failed": sum(r.status is RowStatus.FAILED for r in out),
    }
    wrong = [
        f"{key}={_count(summary, key)!r} but the results count {value}"
        for key, value in counted.items()
        if _count(summary, key) != value
    ]
    if wrong:
        raise Unreconciled("summary does not match the results: " + ", ".join(wrong))
    return out

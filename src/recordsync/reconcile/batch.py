"""Check a batch answer before trusting it, and map its results back to entries by position.

A 2xx batch answer is accepted only when it has exactly one result per entry sent, every
result has a known status, and ``summary`` equals the counts of the results. Anything else
marks the chunk *unreconciled*: its rows become ``in_doubt`` with the reason, never silently
accepted. Unknown extra keys (in the body, the results or the summary) are ignored.
"""

from __future__ import annotations

from typing import Any

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import RowStatus

_STATUSES = {"created": RowStatus.CREATED, "updated": RowStatus.UPDATED, "failed": RowStatus.FAILED}


class Unreconciled(Exception):
    """The batch answer does not match what was sent."""


def record_id_of(value: Any) -> int | None:
    """A record id as the service may write it (an int, or a string of digits); None else."""
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


def _all_applied(results: list[Any], summary: Any) -> list[EntryResult] | None:
    """The common answer, checked in a few passes over the results: every entry created or
    updated with an integer record id, the summary counting exactly those. None for any
    other answer (which :func:`reconcile_batch` then checks result by result)."""
    if not isinstance(summary, dict) or set(map(type, results)) != {dict}:
        return None
    statuses = [r.get("status") for r in results]
    ids = [r.get("id") for r in results]
    created = statuses.count("created")
    if created + statuses.count("updated") != len(results) or set(map(type, ids)) != {int}:
        return None
    expected = {"total": len(results), "created": created, "updated": len(results) - created}
    expected["failed"] = 0
    if any(_count(summary, k) != v for k, v in expected.items()):
        return None
    return list(map(EntryResult, map(_STATUSES.__getitem__, statuses), ids))


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
    fast = _all_applied(results, body.get("summary"))
    if fast is not None:
        return fast
    out: list[EntryResult] = []
    append = out.append
    counted = {"total": sent, "created": 0, "updated": 0, "failed": 0}
    for i, item in enumerate(results):
        if not isinstance(item, dict):
            raise Unreconciled(f"result {i} is not an object")
        raw = item.get("status")
        status = _STATUSES.get(raw) if isinstance(raw, str) else None
        if status is None:
            raise Unreconciled(f"result {i} has unknown status {raw!r}")
        counted[status.value] += 1
        if status is RowStatus.FAILED:
            err = item.get("error")
            append(EntryResult(status, None, str(err) if err else "failed (no error given)"))
            continue
        rid = item.get("id")
        record_id = rid if type(rid) is int else record_id_of(rid)
        if record_id is None:
            raise Unreconciled(f"result {i} is {status.value} but has no record id")
        append(EntryResult(status, record_id))
    summary = body.get("summary")
    if not isinstance(summary, dict):
        raise Unreconciled("answer has no 'summary' object")
    wrong = [
        f"{key}={_count(summary, key)!r} but the results count {value}"
        for key, value in counted.items()
        if _count(summary, key) != value
    ]
    if wrong:
        raise Unreconciled("summary does not match the results: " + ", ".join(wrong))
    return out

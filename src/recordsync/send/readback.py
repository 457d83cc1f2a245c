"""Read back the records of one name from the service's list endpoint (for settling).

``GET /api/objects/{type}?filter[name]=<name>&sort_by=updated_at&sort_order=desc``: the filter
is a case-insensitive substring match, so names are compared exactly here; newest writes
first, so paging stops at the first record older than the time asked for. A target whose
list endpoint answers 404 or 405, or a read that still fails after the client's retries,
raises :class:`Unreadable` with the reason.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from recordsync.reconcile.batch import record_id_of
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryBudget

PAGE = 200
MAX_PAGES = 5
"""Records of one name read back at most (``PAGE * MAX_PAGES``); more is :class:`Unreadable`."""


class Unreadable(Exception):
    """The service could not be read back; the message says why."""


class NameReader:
    """Reads the records of one object type by name."""

    def __init__(
        self, client: RecordServiceClient, object_type: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.client = client
        self.object_type = object_type
        self.clock = clock

    def written_since(
        self, name: str, since: float | None
    ) -> tuple[list[dict[str, Any]], float | None]:
        """Records named exactly ``name`` written at or after local time ``since`` (None: any
        time), and that time on the service's clock (None: unknown, then every record of the
        name counts)."""
        path = self.client.object_path(self.object_type)
        params: dict[str, Any] = {
            "filter[name]": name,
            "sort_by": "updated_at",
            "sort_order": "desc",
            "limit": PAGE,
        }
        out: list[dict[str, Any]] = []
        server_since: float | None = None
        for page_no in range(MAX_PAGES):
            params["offset"] = page_no * PAGE
            body, date = self._read(path, params)
            if page_no == 0 and date is not None and since is not None:
                server_since = since + (date - self.clock())
            page = body.get("data") if isinstance(body, dict) else None
            if not isinstance(page, list):
                raise Unreadable(f"GET {path}: the answer has no 'data' list")
            older = False
            for record in page:
                if not isinstance(record, dict) or record.get("name") != name:
                    continue
                written = when(record.get("updated_at"))
                if server_since is not None and written is not None and written < server_since:
                    older = True
                    continue
                if record_id(record) is not None:
                    out.append(record)
            more = (body.get("pagination") or {}).get("has_more")
            if older or not page or not more:
                return out, server_since
        raise Unreadable(f"more than {PAGE * MAX_PAGES} records are named like {name!r}")

    def _read(self, path: str, params: dict[str, Any]) -> tuple[Any, float | None]:
        """One GET with the client's retries; the body and the answer's ``Date`` (epoch)."""
        budget = RetryBudget(self.client.retry)
        while True:
            attempt = self.client.attempt("GET", path, params=params)
            verdict = attempt.verdict
            if verdict.kind == "ok" and attempt.body_error is None:
                return attempt.body, _http_date(attempt.date)
            if verdict.kind == "ok":
                raise Unreadable(f"GET {path}: {attempt.body_error}")
            if verdict.status in (404, 405):
                raise Unreadable(
                    f"the target has no record list endpoint ({verdict.describe}), so this"
                    " entry was neither resent by another key nor read back"
                )
            wait = budget.next_wait(verdict)
            if verdict.kind not in ("retriable", "rate_limited") or wait is None:
                raise Unreadable(verdict.describe)
            budget.wait(wait)


def record_id(record: dict[str, Any]) -> int | None:
    """The id of a record read back (:func:`recordsync.reconcile.batch.record_id_of`)."""
    return record_id_of(record.get("id"))


def when(value: Any) -> float | None:
    """An ISO 8601 timestamp (``Z`` or an offset) as epoch seconds; None if unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _http_date(value: str | None) -> float | None:
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None

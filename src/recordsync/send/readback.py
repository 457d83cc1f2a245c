"""Read back from the service's list endpoint (for settling), on the service's own clock.

``GET /api/objects/{type}?filter[name]=<name>&sort_by=updated_at&sort_order=desc``: the filter
is a case-insensitive substring match, so names are compared exactly here; newest writes
first, so paging stops at the first record older than the :class:`Mark` asked for.

A :class:`Mark` is a time *as the service stamps records*: the newest ``updated_at`` of the
type (:meth:`NameReader.newest`, one read sorted newest first) or the ``created_at`` of a
record a chunk answered as created (:meth:`NameReader.created_mark`, one read by id). Records
are only ever compared with such a mark, never with the client's clock nor with an answer's
``Date`` header, so clocks that disagree change nothing.

A target whose list endpoint answers 404 or 405, or a read that still fails after the
client's retries, raises :class:`Unreadable` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from recordsync.reconcile.batch import record_id_of
from recordsync.reconcile.holds import instant
from recordsync.send.client import RecordServiceClient
from recordsync.send.retry import RetryBudget

PAGE = 200
MAX_PAGES = 5
"""Records of one name read back at most (``PAGE * MAX_PAGES``); more is :class:`Unreadable`."""


class Unreadable(Exception):
    """The service could not be read back; the message says why."""


class Gone(Unreadable):
    """The record asked for by id is not there (404: deleted, or never was)."""


@dataclass(frozen=True, slots=True)
class Mark:
    """A point on the clock that stamps the service's records, taken before a chunk was sent:
    whatever the chunk wrote is stamped at or after ``at`` (a service stamps in order).
    ``known``: records seen at the mark, written before it (stamps may be equal)."""

    at: float
    known: frozenset[int] = frozenset()


EMPTY = Mark(float("-inf"))
"""The mark of a type holding no record yet: every record counts."""


class NameReader:
    """Reads the records of one object type by name, and the marks to read them since."""

    def __init__(self, client: RecordServiceClient, object_type: str) -> None:
        self.client = client
        self.object_type = object_type
        self.tries = 0
        """Requests this reader sent (a reader per thread: counted without a lock)."""

    def newest(self) -> Mark:
        """The newest ``updated_at`` of the type (one read, newest write first)."""
        path = self.client.object_path(self.object_type)
        params = {"sort_by": "updated_at", "sort_order": "desc", "limit": 1, "offset": 0}
        page = _data(self._read(path, params), path, list)
        if not page:
            return EMPTY
        record = page[0]
        at = when(record.get("updated_at")) if isinstance(record, dict) else None
        if at is None:
            raise Unreadable(f"GET {path}: the newest record has no readable updated_at")
        rid = record_id(record)
        return Mark(at, frozenset({rid} if rid is not None else ()))

    def created_mark(self, rid: int) -> Mark:
        """The ``created_at`` of record ``rid`` (one read by id; it never changes)."""
        path = self.client.object_path(self.object_type)
        record = _data(self._read(path, {"id": rid}, gone_ok=True), path, dict)
        at = when(record.get("created_at"))
        if at is None or record_id(record) != rid:
            raise Unreadable(f"GET {path}?id={rid}: no readable created_at of that record")
        return Mark(at, frozenset({rid}))

    def record(self, rid: int) -> dict[str, Any]:
        """Record ``rid`` as the service holds it (``GET ?id=``, one read with the client's
        retries); :class:`Gone` when it is not there, :class:`Unreadable` when it cannot be
        read (or the answer is another record)."""
        path = self.client.object_path(self.object_type)
        record = _data(self._read(path, {"id": rid}, gone_ok=True), path, dict)
        if record_id(record) != rid:
            raise Unreadable(f"GET {path}?id={rid}: the answer is another record")
        return cast(dict[str, Any], record)

    def written_since(self, name: str, mark: Mark | None) -> list[dict[str, Any]]:
        """Records named exactly ``name`` stamped (``updated_at``) at or after ``mark``
        (None: at any time); a record whose stamp cannot be read counts."""
        path = self.client.object_path(self.object_type)
        params: dict[str, Any] = {
            "filter[name]": name,
            "sort_by": "updated_at",
            "sort_order": "desc",
            "limit": PAGE,
        }
        out: list[dict[str, Any]] = []
        for page_no in range(MAX_PAGES):
            params["offset"] = page_no * PAGE
            body = self._read(path, params)
            page = _data(body, path, list)
            older = False
            for record in page:
                if not isinstance(record, dict) or record.get("name") != name:
                    continue
                written = when(record.get("updated_at"))
                if mark is not None and written is not None and written < mark.at:
                    older = True
                    continue
                if record_id(record) is not None:
                    out.append(record)
            more = (body.get("pagination") or {}).get("has_more")
            if older or not page or not more:
                return out
        raise Unreadable(f"more than {PAGE * MAX_PAGES} records are named like {name!r}")

    def _read(self, path: str, params: dict[str, Any], gone_ok: bool = False) -> Any:
        """One GET with the client's retries: the body. ``gone_ok``: a 404 says the record
        asked for is gone (deleted since), not that there is no list endpoint."""
        budget = RetryBudget(self.client.retry)
        while True:
            self.tries += 1
            attempt = self.client.attempt("GET", path, params=params)
            verdict = attempt.verdict
            if verdict.kind == "ok" and attempt.body_error is None:
                return attempt.body
            if verdict.kind == "ok":
                raise Unreadable(f"GET {path}: {attempt.body_error}")
            if verdict.status == 404 and gone_ok:
                raise Gone(f"GET {path}: the record is gone ({verdict.describe})")
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


when = instant
"""An ISO 8601 timestamp as epoch seconds (:func:`recordsync.reconcile.holds.instant`)."""


def _data(body: Any, path: str, shape: type) -> Any:
    """The ``data`` of an answer, when it is a ``shape`` (list or object)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, shape):
        raise Unreadable(f"GET {path}: the answer has no 'data' {shape.__name__}")
    return data

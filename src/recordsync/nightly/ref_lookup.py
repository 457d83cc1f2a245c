"""``ref: {..., by: <field>, lookup: service}``: a value that fits no row of the referenced
step in this run is looked up among the service's records of that step's object type.

The list endpoint (``GET /api/objects/{type}?filter[<field>]=<value>&limit&offset``, as the
service contract describes it; the seed leaves reads unspecified, hence opt-in) matches a
case-insensitive *substring*, so every record it returns is compared here exactly, after the
reference's normalisation. Bounded: at most :data:`MAX_PAGES` pages of :data:`PAGE_SIZE`
records per value (a value with more substring hits is not decided: the row fails, saying
so) and at most :data:`MAX_VALUES` distinct values per field and run (the rest fail, saying
so); each value is looked up once per run (cached, a failed request too). An
authentication failure stops the run as any other request's would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from recordsync.core.errors import ApiError, FatalApiError

Fetch = Callable[..., Iterator[dict[str, Any]]]
"""``fetch(object_type, page_size=..., **{"filter[field]": value})``: the records of a type
that the list endpoint returns, page after page (``RecordServiceClient.list_records``)."""
PAGE_SIZE = 200
MAX_PAGES = 5
MAX_VALUES = 1000


@dataclass(frozen=True, slots=True)
class Found:
    """What the service holds for one value: the ids of the records whose field normalises
    to it, or why it could not be decided (``problem``)."""

    ids: tuple[int, ...] = ()
    problem: str | None = None


def record_id(value: object) -> int | None:
    """A record's id as an integer (a relationship field takes integers): JSON numbers, and
    the digit strings (``"42"``) the hosted service is known to answer with."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


class ServiceLookup:
    """Exact matches of one field of ``object_type`` in the service, per normalised value."""

    def __init__(
        self,
        fetch: Fetch,
        object_type: str,
        field: str,
        normalize: Callable[[str], str | None],
        *,
        max_values: int = MAX_VALUES,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self.fetch = fetch
        self.object_type = object_type
        self.field = field
        self.normalize = normalize
        self.max_values = max_values
        self.max_pages = max_pages
        self.requests = 0
        """Values looked up (for the tests and the bound)."""
        self._cache: dict[str, Found] = {}

    def find(self, probe: str, norm: str) -> Found:
        """The records whose ``field`` normalises to ``norm``; ``probe`` is sent as the filter
        (a text every such record's value contains, e.g. the host of a domain)."""
        hit = self._cache.get(norm)
        if hit is not None:
            return hit
        if self.requests >= self.max_values:
            return Found(
                problem=f"not looked up in the service: {self.max_values} values of this field"
                " were already looked up in this run (the bound)"
            )
        self.requests += 1
        limit = self.max_pages * PAGE_SIZE
        try:
            records = self.fetch(
                self.object_type, page_size=PAGE_SIZE, **{f"filter[{self.field}]": probe}
            )
            page = list(islice(records, limit + 1))
        except FatalApiError:
            raise
        except ApiError as exc:  # after the client's retries: this value fails, once per run
            failed = Found(problem=f"the service lookup failed: {exc.message}")
            self._cache[norm] = failed
            return failed
        found = Found(ids=self._exact(page[:limit], norm))
        if len(page) > limit and len(found.ids) < 2:
            found = Found(
                problem=f"the service has more than {limit} records whose {self.field} contains"
                " it: not decided"
            )
        self._cache[norm] = found
        return found

    def _exact(self, records: Iterable[dict[str, Any]], norm: str) -> tuple[int, ...]:
        ids: list[int] = []
        for rec in records:
            value, rid = rec.get(self.field), record_id(rec.get("id"))
            if not isinstance(value, str) or rid is None:
                continue
            if self.normalize(value) == norm and rid not in ids:
                ids.append(rid)
        return tuple(ids)

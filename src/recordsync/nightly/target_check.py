"""Trust, but check the target (docs/state.md, "What a nightly run checks in the target").

The ledger says which record each source key became and what was last sent to it; a nightly
run then sends only what changed in the source. That is only right while the target still
holds what the ledger says. So at the end of a run the state keeps, per object type, a
**mark** read from the service itself: the newest ``updated_at`` the service stamped and its
record count. Before the next run's step decides anything:

    records edited since the mark   listed newest first (``sort_by=updated_at``, desc) until
                                    the mark; those the ledger holds lose their input hash,
                                    so their rows are sent again (``changed``), never
                                    reported ``unchanged``
    records deleted since the mark  the count now is below the count at the mark plus the
                                    records created since: every id of the type is listed
                                    once, and ledger entries whose record is gone are marked
                                    deleted, so their rows are created again (``reappeared``)
    records created since the mark  kept (up to :data:`MAX_UNKNOWN`) when the ledger does
    that the ledger does not know   not know them: a row the ledger calls new, of a type the
                                    service never deduplicates, that such a record holds
                                    exactly (name and every value it writes) is sent as an
                                    update of that record, not created a second time. This
                                    settles a state older than the target (a restored backup,
                                    runs whose journal was lost) before anything is created
    either found                    the step's snapshot (the fast path) is dropped for this
                                    run, so every row is compared with the ledger

Only the service's own timestamps are compared with each other (never the client's clock).
Cost per step: one list request (``limit=200``) when nothing changed, one more per 200
records edited since, and a listing of every id of the type when records were deleted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from recordsync.reconcile.holds import holds
from recordsync.state.ledger_rows import DELETED, LIVE_SQL, status_sql, utc_now

PAGE = 200
MAX_EDITED = 50_000
"""Records edited since the mark read at most; past that the step's whole ledger loses its
hashes (every row is sent again), rather than paging on without end."""
LOOKUP_IDS = 2_000
"""Record ids looked up in the ledger by id at most (in statements of 500); past that they
are picked out of one pass over the scope's ids."""
MAX_UNKNOWN = 10_000
"""Records created since the mark that the ledger does not know, kept for matching at most."""


class PageReader(Protocol):
    """One page of the service's list endpoint: ``(records, pagination.total or None)``."""

    def list_page(
        self, object_type: str, *, limit: int, offset: int, **params: Any
    ) -> tuple[list[dict[str, Any]], int | None]: ...


@dataclass(frozen=True, slots=True)
class Mark:
    """What the target looked like at the end of the last run, on the service's clock."""

    newest: str | None
    total: int | None


@dataclass(slots=True)
class Finding:
    """What a step's check found."""

    object_type: str
    edited: list[int] = field(default_factory=list)
    """Ledger record ids edited in the target since the mark."""
    vanished: list[int] = field(default_factory=list)
    """Ledger record ids no longer in the target."""
    unknown: list[dict[str, Any]] = field(default_factory=list)
    """Records created since the mark whose ids the ledger does not hold."""
    all_edited: bool = False
    requests: int = 0

    @property
    def found(self) -> bool:
        return bool(self.edited or self.vanished or self.all_edited or self.unknown)

    def lines(self, step: str) -> list[str]:
        out = []
        if self.all_edited:
            out.append(
                f"step {step}: more than {MAX_EDITED} {self.object_type} records were edited in"
                " the target since the last run: every row of the step is sent again"
            )
        elif self.edited:
            out.append(
                f"step {step}: {len(self.edited)} {self.object_type} record(s) this pipeline"
                " wrote were edited in the target since the last run (e.g. id"
                f" {self.edited[0]}): their rows are sent again"
            )
        if self.unknown:
            out.append(
                f"step {step}: {len(self.unknown)} {self.object_type} record(s) were created in"
                " the target since the last run that the state does not know: a new row one of"
                " them holds exactly is sent as an update of it, not created again"
            )
        if self.vanished:
            out.append(
                f"step {step}: {len(self.vanished)} {self.object_type} record(s) this pipeline"
                " wrote are no longer in the target (e.g. id"
                f" {self.vanished[0]}): their rows are created again"
            )
        return out


class Adoptable:
    """Records the ledger does not know, by name: :meth:`claim` gives each to at most one row
    whose every written value it holds (:func:`holds`)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self._by_name: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            if isinstance(record.get("name"), str):
                self._by_name.setdefault(record["name"], []).append(record)

    def claim(self, payload: dict[str, Any]) -> int | None:
        """The id of an unclaimed record holding ``payload`` (then claimed), else None."""
        candidates = self._by_name.get(payload.get("name"))  # type: ignore[arg-type]
        if not candidates:
            return None
        for i, record in enumerate(candidates):
            rid = _record_id(record)
            if rid is not None and holds(record, payload):
                del candidates[i]
                return rid
        return None


def _time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def read_mark(reader: PageReader, object_type: str) -> Mark:
    """The target's newest ``updated_at`` and record count for ``object_type`` (one request)."""
    page, total = reader.list_page(
        object_type, limit=1, offset=0, sort_by="updated_at", sort_order="desc"
    )
    newest = page[0].get("updated_at") if page else None
    return Mark(newest if isinstance(newest, str) else None, total)


def save_mark(
    conn: sqlite3.Connection, key: str, object_type: str, mark: Mark, run_id: str
) -> None:
    conn.execute("DELETE FROM target_marks WHERE scope = ? AND object_type = ?", (key, object_type))
    conn.execute(
        "INSERT INTO target_marks (scope, object_type, mark, total, run_id, checked_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (key, object_type, mark.newest, mark.total, run_id, utc_now()),
    )


def load_mark(conn: sqlite3.Connection, key: str, object_type: str) -> Mark | None:
    row = conn.execute(
        "SELECT mark, total FROM target_marks WHERE scope = ? AND object_type = ?",
        (key, object_type),
    ).fetchone()
    return None if row is None else Mark(row[0], None if row[1] is None else int(row[1]))


def _ids(reader: PageReader, object_type: str, finding: Finding) -> Iterator[int]:
    offset = 0
    while True:
        page, _ = reader.list_page(
            object_type, limit=PAGE, offset=offset, sort_by="id", sort_order="asc"
        )
        finding.requests += 1
        for record in page:
            rid = _record_id(record)
            if rid is not None:
                yield rid
        if len(page) < PAGE:
            return
        offset += len(page)


def _record_id(record: dict[str, Any]) -> int | None:
    try:
        return int(record["id"])
    except (KeyError, TypeError, ValueError):
        return None


def check(
    reader: PageReader,
    conn: sqlite3.Connection,
    scope_id: int,
    object_type: str,
    mark: Mark,
) -> Finding:
    """Compare the target with the mark the last run left (see the module docstring) and
    the ledger of one scope; changes nothing (:func:`apply` does)."""
    finding = Finding(object_type)
    since = _time(mark.newest)
    edited: set[int] = set()
    made_since: list[dict[str, Any]] = []
    created = 0
    total_now: int | None = None
    offset = 0
    while since is not None:
        page, total = reader.list_page(
            object_type, limit=PAGE, offset=offset, sort_by="updated_at", sort_order="desc"
        )
        finding.requests += 1
        if total_now is None:
            total_now = total
        older = False
        for record in page:
            stamp = _time(record.get("updated_at"))
            if stamp is None or stamp <= since:
                older = True
                break
            rid = _record_id(record)
            if rid is not None:
                edited.add(rid)
            made = _time(record.get("created_at"))
            if made is not None and made > since:
                created += 1
                if len(made_since) < MAX_UNKNOWN:
                    made_since.append(record)
        if older or len(page) < PAGE:
            break
        if len(edited) > MAX_EDITED:
            finding.all_edited = True
            break
        offset += len(page)
    if since is None:  # the target had no record of the type at the mark
        _, total_now = reader.list_page(object_type, limit=1, offset=0)
        finding.requests += 1
    candidates = edited | {rid for r in made_since if (rid := _record_id(r)) is not None}
    known = _held(conn, scope_id, candidates)
    finding.edited = sorted(edited & known)
    finding.unknown = [r for r in made_since if _record_id(r) not in known]
    expected = None if mark.total is None else mark.total + created
    fewer = total_now is not None and expected is not None and total_now < expected
    if fewer and _holds_any(conn, scope_id):
        live = set(_ids(reader, object_type, finding))
        finding.vanished = sorted(r for r in _live_ids(conn, scope_id) if r not in live)
        finding.edited = [i for i in finding.edited if i in live]
    return finding


_LIVE_IDS = (
    f"SELECT record_id FROM ledger WHERE scope_id = ? AND record_id IS NOT NULL AND {LIVE_SQL}"
)


def _held(conn: sqlite3.Connection, scope_id: int, ids: set[int]) -> set[int]:
    """Those of ``ids`` that are live records in the scope's ledger. A few are looked up by
    id; more are picked out of one pass over the scope's ids. Either way, the ledger is never
    held in memory: a nightly run with nothing edited in the target asks nothing here."""
    if not ids:
        return set()
    if len(ids) > LOOKUP_IDS:
        return {rid for rid in _live_ids(conn, scope_id) if rid in ids}
    ordered = sorted(ids)
    held: set[int] = set()
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        held.update(
            int(r[0])
            for r in conn.execute(
                f"{_LIVE_IDS} AND record_id IN ({','.join('?' * len(part))})", (scope_id, *part)
            )
        )
    return held


def _holds_any(conn: sqlite3.Connection, scope_id: int) -> bool:
    return conn.execute(f"{_LIVE_IDS} LIMIT 1", (scope_id,)).fetchone() is not None


def _live_ids(conn: sqlite3.Connection, scope_id: int) -> Iterator[int]:
    """The scope's live record ids, streamed from the ledger."""
    for (rid,) in conn.execute(_LIVE_IDS, (scope_id,)):
        yield int(rid)


def apply(conn: sqlite3.Connection, scope_id: int, finding: Finding) -> None:
    """What the check found, into the ledger (in the caller's transaction): edited records'
    entries lose their input hash; vanished records' entries are marked deleted."""
    if finding.all_edited:
        conn.execute("UPDATE ledger SET input_hash = NULL WHERE scope_id = ?", (scope_id,))
    for ids, sql in (
        (finding.edited, "UPDATE ledger SET input_hash = NULL"),
        (
            finding.vanished,
            f"UPDATE ledger SET input_hash = NULL, last_status = {status_sql(DELETED)}",
        ),
    ):
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            conn.execute(
                f"{sql} WHERE scope_id = ? AND record_id IN ({','.join('?' * len(part))})",
                (scope_id, *part),
            )

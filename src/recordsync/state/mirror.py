"""Mirror deletes: soft-delete the records whose keys left the source (per mapping, opt-in).

:func:`plan_deletes` compares the ledger with the keys seen in this run's source and refuses
(:class:`RunAborted`, nothing deleted) when

- the source had no keys at all while the ledger knows records (an empty export must never
  delete everything), or
- more than ``max_count`` records would go, or more than ``max_share`` (0..1) of the
  mapping's live records.

``seen_keys`` must hold the key of every row of the source, whatever its status this run
(an invalid or duplicate row still exists at the source: its record must stay). They go into
a temporary table, so memory stays flat for millions of keys; only the planned deletes
(bounded by ``max_count`` when given) are held in memory.

:func:`apply_deletes` calls ``delete_fn(record_id)`` per planned record and marks each
deleted key ``deleted`` in the ledger (record id kept for the audit trail, hash cleared): if
the key comes back, it is sent again (reason ``reappeared``) and, the old record being
deleted, never matched by the ledger's id. ``delete_fn`` should return normally when the
service says the record is already gone (404 ``Object not found``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from recordsync.core.errors import ApiError, AuthError, ObjectTypeNotFound, RunAborted
from recordsync.state.ledger_rows import LIVE_SQL, STATUS_CODES
from recordsync.state.store import DELETED, StateStore
from recordsync.state.targets import pipeline_of

_LIVE = f"record_id IS NOT NULL AND {LIVE_SQL}"

DEFAULT_MAX_SHARE = 0.10
"""Suggested default for a mapping's ``mirror_deletes.max_share`` when mirror deletes are on."""
DEFAULT_MAX_COUNT: int | None = None
"""Suggested default for ``mirror_deletes.max_count``: no count limit, the share limit applies."""


@dataclass(slots=True)
class DeletePlan:
    store: StateStore
    pipeline: str
    mapping: str
    live_records: int
    seen_keys: int
    deletes: list[tuple[str, int]] = field(default_factory=list)
    """``(source_key, record_id)`` of every record to delete, in key order."""


@dataclass(slots=True)
class DeleteResult:
    deleted: list[tuple[str, int]] = field(default_factory=list)
    failed: list[tuple[str, int, str]] = field(default_factory=list)
    """``(source_key, record_id, error message)``."""


def _batches(keys: Iterable[str], size: int = 5000) -> Iterator[list[tuple[str]]]:
    it = iter(keys)
    while batch := [(k,) for k in islice(it, size)]:
        yield batch


def plan_deletes(
    store: StateStore,
    pipeline: str,
    mapping: str,
    seen_keys: Iterable[str],
    *,
    max_count: int | None,
    max_share: float | None,
) -> DeletePlan:
    """The records of (pipeline, mapping) whose keys are not in ``seen_keys``."""
    if max_share is not None and not 0 <= max_share <= 1:
        raise ValueError(f"max_share must be between 0 and 1, not {max_share}")
    scope = store.scope_id(pipeline, mapping, create=False)
    conn = store.connection
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS mirror_seen (k TEXT PRIMARY KEY) WITHOUT ROWID")
    with store.transaction():
        conn.execute("DELETE FROM temp.mirror_seen")
        for batch in _batches(seen_keys):
            conn.executemany("INSERT OR IGNORE INTO temp.mirror_seen (k) VALUES (?)", batch)
    seen = int(conn.execute("SELECT count(*) FROM temp.mirror_seen").fetchone()[0])
    if scope is None:
        return DeletePlan(store, pipeline, mapping, 0, seen)
    live = int(
        conn.execute(
            f"SELECT count(*) FROM ledger WHERE scope_id = ? AND {_LIVE}", (scope,)
        ).fetchone()[0]
    )
    gone_sql = (
        f"FROM ledger WHERE scope_id = ? AND {_LIVE}"
        " AND source_key NOT IN (SELECT k FROM temp.mirror_seen)"
    )
    gone = int(conn.execute(f"SELECT count(*) {gone_sql}", (scope,)).fetchone()[0])
    what = f"mirror deletes of mapping '{mapping}' (pipeline '{pipeline_of(pipeline)}')"
    if seen == 0 and live > 0:
        raise RunAborted(
            f"{what}: the source has no rows, so all {live} records would be deleted;"
            " refused, nothing was deleted",
            hint="check the export; an empty source never deletes. To really remove everything,"
            " delete the records in the service and run `recordsync state reset`",
        )
    share = gone / live if live else 0.0
    over = []
    if max_count is not None and gone > max_count:
        over.append(f"mirror_deletes.max_count {max_count}")
    if max_share is not None and share > max_share:
        over.append(f"mirror_deletes.max_share {max_share:.0%}")
    if over:
        raise RunAborted(
            f"{what}: {gone} of {live} records ({share:.1%}) left the source, above"
            f" {' and '.join(over)}; refused, nothing was deleted",
            hint="check the export for missing rows; if these deletes are intended, run once"
            " with `recordsync run --allow-mass-deletes`, or raise mirror_deletes.max_count /"
            " max_share in the mapping",
        )
    deletes = [
        (str(k), int(r))
        for k, r in conn.execute(
            f"SELECT source_key, record_id {gone_sql} ORDER BY source_key", (scope,)
        )
    ]
    conn.execute("DELETE FROM temp.mirror_seen")
    return DeletePlan(store, pipeline, mapping, live, seen, deletes)


def apply_deletes(
    plan: DeletePlan, delete_fn: Callable[[int], object], *, run_id: str | None = None
) -> DeleteResult:
    """Delete the planned records one by one, marking each in the ledger as it goes (so a
    killed run never deletes twice). API errors on one record are collected and the rest go
    on; an authentication failure or an unknown object type stops at once."""
    result = DeleteResult()
    scope = plan.store.scope_id(plan.pipeline, plan.mapping, create=False)
    if scope is None:
        return result
    for key, record_id in plan.deletes:
        try:
            delete_fn(record_id)
        except (AuthError, ObjectTypeNotFound):
            raise
        except ApiError as exc:
            result.failed.append((key, record_id, str(exc)))
            continue
        with plan.store.transaction() as conn:
            run_no = None if run_id is None else plan.store.run_number(run_id)
            conn.execute(
                "UPDATE ledger SET last_status = ?, input_hash = NULL, last_run = ?"
                " WHERE scope_id = ? AND source_key = ?",
                (STATUS_CODES[DELETED], run_no, scope, key),
            )
        result.deleted.append((key, record_id))
    return result

"""Guards of a whole run that belong to no single stage (beside :mod:`recordsync.run.runner`).

- :func:`recreate_refusal`: a step keyed only by the state store's ledger whose ledger is
  empty while the target already holds records of its type would create every row again
  (the state store was lost): refused before anything is sent unless ``--allow-recreate``
  (:func:`recordsync.config.idempotency.refuse_recreate` decides; this reads the store).
- :func:`state_write_error`: the state store cannot be opened (exit 2, nothing sent) or
  written mid-run (exit 3): a named error with the next step instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recordsync.config.idempotency import ledger_keyed, refuse_recreate, service_key
from recordsync.core.errors import ConfigError, RecordsyncError, RunAborted
from recordsync.state import Journal, StateStore
from recordsync.state.location import PgUrl, StateLocation
from recordsync.state.store import state_exists
from recordsync.state.targets import pipeline_of

RECREATE_HINT = (
    "restore the state database (with its -wal file) from a backup, or point --state-db at"
    " the right one; to create every row again anyway, run again with --allow-recreate;"
    " nothing was sent"
)


def recreate_refusal(
    state_db: StateLocation,
    pipeline: str,
    run_steps: list[tuple[str, Any]],
    has_records: Callable[[str], bool],
    store: StateStore | None = None,
) -> str | None:
    """Why the run must not go on (see the module docstring), or None. Not for a run that
    resumes an incomplete one: its journal holds what it created. ``store``: the store at
    ``state_db``, already open (left open here); None: opened here if it exists."""
    if not any(service_key(m) is None and ledger_keyed(m) for _, m in run_steps):
        return None  # no ledger-only step: nothing to refuse (and no ledger to count)
    counts: dict[str, dict[str, int]] = {}
    if store is not None:
        if Journal(store, pipeline).last_incomplete_run() is not None:
            return None
        counts = store.counts(pipeline)
    elif state_exists(state_db):
        with StateStore(state_db) as opened:
            if Journal(opened, pipeline).last_incomplete_run() is not None:
                return None
            counts = opened.counts(pipeline)
    return refuse_recreate(
        run_steps, counts, has_records, pipeline=pipeline_of(pipeline), state_db=state_db
    )


def state_write_error(path: StateLocation, exc: BaseException, *, sent: bool) -> RecordsyncError:
    """The state store cannot be opened or written (a full disk, a read-only directory, a
    PostgreSQL server gone): a ConfigError before anything was sent (exit 2), else
    RunAborted (exit 3). ``str(path)`` of a PostgreSQL URL hides its password."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    pg = isinstance(path, PgUrl)
    if isinstance(path, PgUrl):
        why = path.hide(why)
    fix = "check that the PostgreSQL server runs and takes this user's writes" if pg else ""
    if not sent:
        return ConfigError(
            f"cannot open the state store: {why}",
            file=str(path),
            hint=f"{fix} (or give --state-db); nothing was sent"
            if pg
            else "free space on that disk or make the directory writable (or give --state-db);"
            " nothing was sent",
        )
    return RunAborted(
        f"cannot write the state store {path}: {why}; the run stopped",
        hint=f"{fix or 'free space on that disk'}, then run again: the next run resumes this"
        " one (rows whose answer was not journaled are held in doubt or sent again when that"
        " is safe)",
    )

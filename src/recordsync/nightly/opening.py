"""Opening the state for a run (docs/state.md): the pipeline's lock and key spaces, a run that
died settled or resumed, the run started, then the run's :class:`StateHook`.

    with open_state(pipeline, path, run_id, settings=...) as state:
        run_plans(..., hook=state)
        state.finish(aborted=...)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from recordsync.nightly.hook import HookSettings, StateHook
from recordsync.state import Journal, StateStore
from recordsync.state.checkpoint import BackgroundCheckpoints
from recordsync.state.keyspace import KeySpace, hold_key_spaces
from recordsync.state.location import PgUrl
from recordsync.tuning import sizes

log = logging.getLogger(__name__)


@contextmanager
def open_state(
    pipeline: str,
    path: Path | PgUrl | None,
    run_id: str,
    *,
    full_refresh: bool = False,
    resend_in_doubt: bool = False,
    durable: bool = False,
    lock_name: str | None = None,
    key_spaces: Sequence[KeySpace] = (),
    wait_for_lock: float = 0.0,
    settings: HookSettings | None = None,
    store: StateStore | None = None,
) -> Iterator[StateHook]:
    """Lock the pipeline and its ``key_spaces`` (:mod:`recordsync.state.keyspace`), settle a
    run that died, start ``run_id``; yield the hook. ``wait_for_lock``: seconds to wait for
    a lock another run holds before refusing; ``settings``: the run's side of the hook.

    ``pipeline`` is the state key (:func:`recordsync.state.targets.state_key`: the pipeline
    and its target); ``lock_name`` the pipeline's own name, which the lock is taken under
    (default: ``pipeline``).

    ``durable=False`` (WAL, ``synchronous=NORMAL``): a committed chunk survives the process
    being killed; ``durable=True`` also fsyncs every commit, to survive a power cut.

    ``store``: the store at ``path``, already open with the same ``durable`` (a run's own,
    opened once for its binding, its checks and this hook), its pipeline lock held by the
    caller: used and left open, the lock not taken again; None: opened and locked here,
    closed at the end."""
    own = store is None
    if store is None:
        store = StateStore(path, durable=durable)
    try:
        lock_name = lock_name or pipeline
        lock: AbstractContextManager[object] = nullcontext()
        if own:
            lock = taken = store.pipeline_lock(lock_name)
            taken.wait = wait_for_lock
        spaces = hold_key_spaces(key_spaces, pipeline=lock_name, store=store, wait=wait_for_lock)
        with lock, spaces:
            journal = Journal(
                store, pipeline, defer_ledger=True, slices=(sizes.FOLD_FROM, sizes.FOLD_SLICE)
            )
            info, resumed = journal.resume_or_start(run_id)
            if resumed:
                held = journal.settle_in_flight(info.run_id)
                log.warning(
                    "resuming run %s of %s (attempt %d): %d in-flight rows held in doubt",
                    info.run_id,
                    pipeline,
                    info.attempts,
                    len(held),
                )
            # SQLite's write-ahead log checkpointed while the run writes (PostgreSQL: the server's)
            background = None if store.is_postgres else BackgroundCheckpoints(store.path)
            try:
                yield StateHook(
                    store,
                    journal,
                    info.run_id,
                    pipeline,
                    full_refresh=full_refresh,
                    resend_in_doubt=resend_in_doubt,
                    resumed=resumed,
                    settings=settings,
                    background=background,
                )
            finally:
                if background is not None:
                    background.close()
    finally:
        if own:
            store.close()

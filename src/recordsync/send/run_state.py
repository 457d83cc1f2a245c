"""The state store's side of a pipeline run: where the state lives, the dry run's hook for
references, and the deleter its mirror deletes use."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from recordsync.send.client import RecordServiceClient
from recordsync.send.plan import ChunkHook
from recordsync.state.location import StateLocation, state_exists, state_location
from recordsync.state.targets import BoundTarget, TargetIdentity, bind, state_key

if TYPE_CHECKING:
    from recordsync.send.pipeline import RunRequest

@contextmanager
def dry_run_refs(
    request: RunRequest, name: str, configs: Mapping[str, Any], lookup: Any = None
) -> Iterator[ChunkHook]:
    """A dry run's hook (docs/state.md, "Cross-object references"): ledger keys and references
    as in the real run, from the state store's ledger (opened only if the file exists; never
    written) plus the rows the dry run's earlier steps found valid."""
    from recordsync.state import StateStore
    from recordsync.state.dry_run_refs import DryRunRefsHook, referenced_steps
    from recordsync.state.refs import RunLedger

    path = state_path(request)
    wanted = referenced_steps(configs.values()) and state_exists(path)
    store = StateStore(path, durable=False) if wanted else None
    try:
        yield DryRunRefsHook(RunLedger(store), name, configs, lookup)
    finally:
        if store is not None:
            store.close()


def delete_record(client: RecordServiceClient, object_type: str, record_id: int) -> bool:
    """Soft-delete one record: True if deleted now, False if it was already gone (a 404: the
    object type exists, since the step's upserts just went through it)."""
    from recordsync.errors import ObjectTypeNotFound

    try:
        return client.delete(object_type, record_id)
    except ObjectTypeNotFound:
        return False


def state_path(request: RunRequest) -> StateLocation:
    """The run's state database: ``--state-db``, else ``$RECORDSYNC_STATE_DB`` (a file or a
    ``postgresql://`` URL), else ``.recordsync/state.db``."""
    return state_location(request.state_db)


def bind_target(
    request: RunRequest, pipeline: str, identity: TargetIdentity, *, dry_run: bool
) -> BoundTarget:
    """The run's target in the state store (:mod:`recordsync.state.targets`): recorded (or
    found) under the pipeline's lock by a real run; only looked up by a dry run, which
    writes nothing (and opens no store that does not exist)."""
    from recordsync.state import StateStore

    path = state_path(request)
    if dry_run and not state_exists(path):
        return BoundTarget(None, state_key(pipeline, None), identity.url, True, ())
    with StateStore(path, durable=False) as store:
        if dry_run:
            return bind(store.connection, pipeline, identity, write=False)
        lock = store.pipeline_lock(pipeline)
        lock.wait = request.wait_for_lock
        with lock, store.transaction() as conn:
            return bind(
                conn,
                pipeline,
                identity,
                write=True,
                adopt=request.adopt_state,
                state_db=path,
                postgres=store.is_postgres,
            )

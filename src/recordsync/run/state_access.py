"""The state store's side of a pipeline run: the dry run's hook for references, the binding
of the run's target, and the deleter its mirror deletes use."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from recordsync.core.errors import ObjectTypeNotFound
from recordsync.nightly.dry_run_refs import DryRunRefsHook, referenced_steps
from recordsync.nightly.refs import RunLedger
from recordsync.send.client import RecordServiceClient
from recordsync.send.plan import ChunkHook
from recordsync.state import StateStore
from recordsync.state.location import StateLocation
from recordsync.state.store import state_exists
from recordsync.state.targets import BoundTarget, TargetIdentity, bind, state_key


@contextmanager
def dry_run_refs(
    path: StateLocation, name: str, configs: Mapping[str, Any], lookup: Any = None
) -> Iterator[ChunkHook]:
    """A dry run's hook (docs/state.md, "Cross-object references"): ledger keys and references
    as in the real run, from the state store's ledger at ``path`` (opened only if it exists;
    never written) plus the rows the dry run's earlier steps found valid."""
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
    try:
        return client.delete(object_type, record_id)
    except ObjectTypeNotFound:
        return False


def bind_target(
    path: StateLocation,
    pipeline: str,
    identity: TargetIdentity,
    *,
    dry_run: bool,
    wait_for_lock: float = 0.0,
    adopt: bool = False,
    store: StateStore | None = None,
) -> BoundTarget:
    """The run's target in the state store at ``path`` (:mod:`recordsync.state.targets`):
    recorded (or found) under the pipeline's lock by a real run; only looked up by a dry run,
    which writes nothing (and opens no store that does not exist). ``store``: the store at
    ``path``, already open and the pipeline's lock held on it by the caller (a real run's
    own, kept for the whole run): left open and locked here; None: opened, locked and
    closed here."""
    if store is not None and not dry_run:
        return _bind(store, path, pipeline, identity, adopt)
    if dry_run and not state_exists(path):
        return BoundTarget(None, state_key(pipeline, None), identity.url, True, ())
    with StateStore(path, durable=False) as opened:
        if dry_run:
            return bind(opened.connection, pipeline, identity, write=False)
        lock = opened.pipeline_lock(pipeline)
        lock.wait = wait_for_lock
        with lock:
            return _bind(opened, path, pipeline, identity, adopt)


def _bind(
    store: StateStore, path: StateLocation, pipeline: str, identity: TargetIdentity, adopt: bool
) -> BoundTarget:
    """A real run's binding, under the pipeline's lock."""
    with store.transaction() as conn:
        return bind(
            conn,
            pipeline,
            identity,
            write=True,
            adopt=adopt,
            state_db=path,
            postgres=store.is_postgres,
        )

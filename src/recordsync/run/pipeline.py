"""``run_pipeline``: a pipeline file → target → schema and users → prepared steps → run_plans.

Everything that can be checked before the first request is checked first (pipeline and
mapping files, every step's source and columns), so a configuration error sends nothing.
The steps' checks and plans are made in :mod:`recordsync.run.plans`; the state store's
side of the run (the target's binding, the dry run's hook, the deleter) in
:mod:`recordsync.run.state_access`.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from recordsync import tuning
from recordsync.config import load_pipeline
from recordsync.config.after_run import SkillTrigger, VerifySettings
from recordsync.config.idempotency import idempotency_warnings
from recordsync.config.models import PipelineConfig
from recordsync.config.unattended import NotifySettings
from recordsync.core.errors import ApiError, AuthError, ConfigError
from recordsync.nightly.dry_run_refs import refuse_refs_without_state
from recordsync.nightly.hook import HookSettings
from recordsync.nightly.opening import open_state
from recordsync.run.guards import RECREATE_HINT, recreate_refusal, state_write_error
from recordsync.run.history import record_run
from recordsync.run.notify import missing_variables
from recordsync.run.plans import PlanWrapper, build_plans, check_sources
from recordsync.run.runner import RunLimits, RunResult, limits_from, new_run_id, run_plans
from recordsync.run.state_access import bind_target, delete_record, dry_run_refs
from recordsync.run.target import (
    DEFAULT_PROFILES,
    DEFAULT_SANDBOX_DB,
    Target,
    choose_target,
    open_target,
)
from recordsync.run.verify import ReadBack, remapper
from recordsync.run.volume import VolumeGuards
from recordsync.send.client import RecordServiceClient, make_http_client
from recordsync.send.retry import RetryPolicy
from recordsync.send.step import ChunkHook, Progress, SendOptions
from recordsync.state.history import RunHistory
from recordsync.state.keyspace import hold_key_spaces, key_spaces
from recordsync.state.location import StateLocation, state_location
from recordsync.state.names import state_name
from recordsync.state.store import DB_ERRORS, StateStore
from recordsync.state.targets import TargetIdentity
from recordsync.tuning import Tuning, sizes
from recordsync.validate.refs_check import check_refs
from recordsync.validate.schema import Schema

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_STATE_ERRORS: tuple[type[Exception], ...] = (OSError, *DB_ERRORS)
"""What opening or writing the state store raises (a file, or a PostgreSQL server)."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """A run as asked for on the command line (keyword names mirror the flags)."""

    pipeline_path: Path
    dry_run: bool = False
    base_url: str | None = None
    profile: str | None = None
    report_dir: Path | None = None
    chunk_size: int | None = None
    canary_size: int | None = None
    max_failure_rate: float | None = None
    max_creates: int | None = None
    sandbox_db: Path = DEFAULT_SANDBOX_DB
    sandbox_seed: Path | None = None
    """The embedded sandbox's seed file (schema and users); None: the default seed."""
    env: Mapping[str, str] | None = None
    retry: RetryPolicy | None = None
    state: bool = True
    state_db: StateLocation | None = None
    full_refresh: bool = False
    resend_in_doubt: bool = False
    allow_mass_deletes: bool = False
    durable_state: bool = False
    allow_recreate: bool = False
    adopt_state: bool = False
    """Bind state written before targets were recorded to this run's target."""
    wait_for_lock: float = 0.0
    """Seconds to wait for a run holding this run's pipeline or key-space locks (0: refuse)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    verify: bool | None = None
    """Read back a sample of each step's records (``--verify``/``--no-verify``); None: as
    the pipeline's and mappings' ``verify:`` say."""
    list_unchanged: bool | None = None
    """List unchanged rows in results.csv (None: the pipeline's ``report.list_unchanged``)."""
    tuning: Tuning | None = None
    """The process-wide tweaks for this run (:mod:`recordsync.tuning`); None: the process's
    setting (off in a library, unless :func:`recordsync.tuning.enable` was called; on from
    the command line)."""


def profiles_path(request: RunRequest) -> Path | None:
    """``$RECORDSYNC_PROFILES``, else ./configs/profiles.yaml, else ../configs/profiles.yaml
    next to the pipeline's directory (the layout of pipelines/ and configs/)."""
    env = os.environ if request.env is None else request.env
    if env.get("RECORDSYNC_PROFILES"):
        return Path(env["RECORDSYNC_PROFILES"])
    if DEFAULT_PROFILES.is_file():
        return DEFAULT_PROFILES
    return request.pipeline_path.resolve().parent.parent / DEFAULT_PROFILES


def _load(path: Path) -> Any:
    return load_pipeline(path)


def run_pipeline(
    request: RunRequest,
    *,
    progress: Progress | None = None,
    on_target: Callable[[Target], None] | None = None,
    http: httpx.Client | None = None,
    target: Target | None = None,
    hook: ChunkHook | None = None,
    wrap: PlanWrapper | None = None,
    steps: set[str] | None = None,
    pipeline_override: Any = None,
    retry_of: str | None = None,
) -> RunResult:
    """Run a pipeline file. ``http``/``target`` let tests inject an in-process sandbox."""
    with tuning.using(request.tuning):
        return _run_pipeline(
            request,
            progress=progress,
            on_target=on_target,
            http=http,
            target=target,
            hook=hook,
            wrap=wrap,
            steps=steps,
            pipeline_override=pipeline_override,
            retry_of=retry_of,
        )


def _run_pipeline(
    request: RunRequest,
    *,
    progress: Progress | None,
    on_target: Callable[[Target], None] | None,
    http: httpx.Client | None,
    target: Target | None,
    hook: ChunkHook | None,
    wrap: PlanWrapper | None,
    steps: set[str] | None,
    pipeline_override: Any,
    retry_of: str | None,
) -> RunResult:
    pipeline = pipeline_override if pipeline_override is not None else _load(request.pipeline_path)
    check_sources(pipeline)
    # a retry runs only some steps: references and ledgers are those of the whole pipeline
    whole = pipeline if pipeline_override is None else _load(request.pipeline_path)
    check_refs(whole)
    if not request.state and hook is None:  # before the target is even contacted
        run = [s for s in pipeline.steps if steps is None or s.step_name in steps]
        refuse_refs_without_state((s.step_name, s.config) for s in run)
    configs = {s.step_name: s.config for s in whole.steps}
    configs.update({s.step_name: s.config for s in pipeline.steps})
    partial = pipeline_override is not None
    run_steps = [
        (s.step_name, s.config) for s in pipeline.steps if steps is None or s.step_name in steps
    ]
    warnings = idempotency_warnings(run_steps, state=request.state or hook is not None)
    overrides = {
        "chunk_size": request.chunk_size,
        "dry_run": request.dry_run,
        **{
            k: v
            for k, v in (
                ("canary_size", request.canary_size),
                ("max_failure_rate", request.max_failure_rate),
                ("max_creates", request.max_creates),
            )
            if v is not None
        },
        **request.overrides,
    }
    options, limits = limits_from(pipeline.send, overrides)

    prepared = _Prepared(
        pipeline=pipeline,
        name=state_name(pipeline.name, request.pipeline_path),
        report_root=request.report_dir or Path(pipeline.report.directory),
        options=options,
        limits=limits,
        steps=steps,
        retry_of=retry_of,
        configs=configs,
        partial=partial,
        run_steps=run_steps,
        warnings=warnings,
    )

    def go(chosen: Target) -> RunResult:
        return _run(request, prepared, chosen, http=http, progress=progress, hook=hook, wrap=wrap)

    if target is not None:
        return go(target)
    choice = choose_target(
        base_url=request.base_url,
        profile=request.profile,
        pipeline_target=pipeline.target,
        env=request.env,
        profiles_path=profiles_path(request),
    )
    with open_target(
        choice, env=request.env, sandbox_db=request.sandbox_db, seed=request.sandbox_seed
    ) as opened:
        if on_target is not None:
            on_target(opened)
        return go(opened)


def read_service(
    client: RecordServiceClient, beside: Callable[[], _T]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], _T]:
    """The service's schema and users, and what ``beside()`` returns: both GETs are asked at
    once, each on a worker thread, while this thread runs ``beside`` (local work that needs
    neither answer: the state store's open), so that no one of them waits for another.

    Nothing is sent before this returns, and what fails is raised as if one after the other:
    an ApiError of a GET (the schema's first) once both GETs are over, whatever ``beside``
    did (its result is dropped: its caller closes what it opened); else ``beside``'s own
    error, once both answers are in. Interrupted (Ctrl-C), it returns at once: a GET still
    in flight ends on its own."""
    pool = ThreadPoolExecutor(2, thread_name_prefix="recordsync-meta")
    done = False
    try:
        schema = pool.submit(client.schema)
        users = pool.submit(client.users)
        try:
            beside_result = beside()
        except Exception:
            wait((schema, users))
            schema.result()  # an ApiError first
            users.result()
            raise
        wait((schema, users))
        answers = schema.result(), users.result()  # the schema's error first
        done = True
        return answers[0], answers[1], beside_result
    finally:
        pool.shutdown(wait=done, cancel_futures=not done)


def _record_stopped(
    state_db: StateLocation,
    name: str,
    result: RunResult,
    pipeline: Any,
    notify: NotifySettings | None,
    env: Mapping[str, str],
    runtime: float,
) -> None:
    """A run stopped before its target could be identified (the service unreachable, a
    wrong key): kept in the history of the pipeline's last run into that target's name, and
    its alert sent. A state store that cannot be written then is logged: the run's own
    error is the one to report."""
    try:
        with StateStore(state_db) as store:
            key = RunHistory(store).last_key_for(name, result.summary.get("target")) or name
            record_run(
                store,
                key,
                result,
                notify=notify,
                history=pipeline.history,
                whole_run=False,
                runtime=runtime,
                env=env,
            )
    except _STATE_ERRORS as exc:
        log.warning("the stopped run could not be kept in the history: %s", exc)


def _skill(pipeline: Any) -> SkillTrigger | None:
    return pipeline.after_run.skill if isinstance(pipeline, PipelineConfig) else None


def read_back(
    pipeline: Any,
    asked: bool | None,
    client: RecordServiceClient,
    schema_json: list[dict[str, Any]],
    users: list[dict[str, Any]],
) -> ReadBack:
    """The run's read-back (:mod:`recordsync.run.verify`): each step's ``verify:`` (the
    pipeline's, overridden by its mapping's), all on or off when ``asked``."""
    base = pipeline.verify if isinstance(pipeline, PipelineConfig) else VerifySettings()
    settings: dict[str, VerifySettings] = {}
    remaps = {}
    schema = Schema.from_api(schema_json)
    for step in pipeline.steps:
        own = step.config.verify
        chosen = own.over(base) if own is not None else base
        if asked is not None:
            chosen = chosen.model_copy(update={"enabled": asked})
        settings[step.step_name] = chosen
        remaps[step.step_name] = remapper(step.config, step.base_dir, schema, users)
    off = (
        None
        if any(v.enabled and v.sample for v in settings.values())
        else ("--no-verify" if asked is False else "verify is off (sample 0 or enabled: false)")
    )
    shared = {s.step_name for s in pipeline.steps if s.config.merges == "expected"}
    return ReadBack(client, settings, schema, remaps, shared=shared, off=off)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A run as read from its pipeline file, before its target is contacted."""

    pipeline: Any
    name: str
    """The pipeline's state name (its lock; with the target, its state key)."""
    report_root: Path
    options: SendOptions
    limits: RunLimits
    steps: set[str] | None
    """The steps to run (None: all of them)."""
    retry_of: str | None
    configs: dict[str, Any]
    """Every step's mapping config by step name (a retry's too: references, ledgers)."""
    partial: bool
    """A retry of failed rows only: no mirror deletes."""
    run_steps: list[tuple[str, Any]]
    warnings: list[str]


def _run(
    request: RunRequest,
    prepared: _Prepared,
    target: Target,
    *,
    http: httpx.Client | None,
    progress: Progress | None,
    hook: ChunkHook | None,
    wrap: PlanWrapper | None,
) -> RunResult:
    pipeline, name, options, limits = (
        prepared.pipeline,
        prepared.name,
        prepared.options,
        prepared.limits,
    )
    steps, configs, partial = prepared.steps, prepared.configs, prepared.partial
    began = time.monotonic()
    env = os.environ if request.env is None else request.env
    # the run's state database: --state-db, else $RECORDSYNC_STATE_DB, else .recordsync/state.db
    state_db = state_location(request.state_db)
    own = http is None
    http_client = http if http is not None else make_http_client(base_url=target.base_url)
    kept = ExitStack()  # the run's state store: opened once, closed when the run ends
    try:
        client = RecordServiceClient(
            http_client, target.base_url, target.api_key, retry=request.retry
        )
        run_steps, warnings = prepared.run_steps, prepared.warnings
        # the pipeline's alerts, else those of the profile its target came from
        notify = pipeline.notify if pipeline.notify is not None else target.notify
        if notify is not None and not options.dry_run:
            warnings = [*warnings, *missing_variables(notify, env)]
        report_to = functools.partial(  # what every run_plans call of this run shares
            run_plans,
            pipeline=name,
            report_root=prepared.report_root,
            options=options,
            client=None if options.dry_run else client,
            target=target,
            progress=progress,
            retry_of=prepared.retry_of,
            pipeline_file=str(request.pipeline_path.resolve()),
            list_unchanged=(
                pipeline.report.list_unchanged
                if request.list_unchanged is None
                else request.list_unchanged
            ),
        )
        opens_store = request.state and hook is None and not options.dry_run

        def open_store() -> StateStore | None:
            """A real run's state store, opened once: the binding of the target, the check of
            a ledger-only step and the run's hook share one connection (and the pipeline's
            lock, taken once)."""
            if not opens_store:
                return None
            return kept.enter_context(StateStore(state_db, durable=request.durable_state))

        try:  # the store is opened while the schema and the users are asked for
            schema_json, users, store = read_service(client, open_store)
        except ApiError as exc:  # 401/3xx, 5xx after the retries, unreachable: nothing sent
            kept.close()  # the store, if it was opened: the stopped run is kept by its own
            stop = exc.with_hint(target.auth_hint()) if isinstance(exc, AuthError) else exc
            stopped = report_to(
                build_plans(pipeline, None, None, wrap, steps, check=False),
                warnings=warnings,
                stopped=stop,
                skill=_skill(pipeline),  # tried: a service that failed the reads may take it
            )
            if request.state and hook is None and not options.dry_run:
                runtime = time.monotonic() - began
                _record_stopped(state_db, name, stopped, pipeline, notify, env, runtime)
            return stopped
        except _STATE_ERRORS as exc:  # the store cannot be opened: nothing was sent yet
            raise state_write_error(state_db, exc, sent=False) from None

        def has_records(object_type: str) -> bool:
            return next(iter(client.list_records(object_type, page_size=1)), None) is not None

        key = name  # the state key: the pipeline's name and its target
        if request.state and hook is None:
            identity = TargetIdentity.read(target.state_identity, users)
            try:
                if store is not None:  # held from the binding of the target to the run's end
                    lock = store.pipeline_lock(name)
                    lock.wait = request.wait_for_lock
                    kept.enter_context(lock)
                bound = bind_target(
                    state_db,
                    name,
                    identity,
                    dry_run=options.dry_run,
                    wait_for_lock=request.wait_for_lock,
                    adopt=request.adopt_state,
                    store=store,
                )
            except _STATE_ERRORS as exc:  # nothing was sent yet
                raise state_write_error(state_db, exc, sent=False) from None
            key = bound.key
            first = bound.note(name)
            if first is not None:
                warnings = [*warnings, first]
        if request.state and hook is None and not request.allow_recreate:
            refused = recreate_refusal(state_db, key, run_steps, has_records, store=store)
            if refused is not None and not options.dry_run:
                raise ConfigError(refused, hint=RECREATE_HINT)
            if refused is not None:
                warnings = [*warnings, f"the real run would stop: {refused}; {RECREATE_HINT}"]
        slices = None if options.dry_run else sizes.SLICE_ROWS  # a dry run has no chunks to wait
        readback = read_back(pipeline, request.verify, client, schema_json, users)
        plans = build_plans(
            pipeline, schema_json, users, wrap, steps, slices, sample_cells=readback.watch.sizes
        )
        run_id = new_run_id(name)
        skill = _skill(pipeline)

        def go(hook: ChunkHook | None, guards: VolumeGuards | None = None) -> RunResult:
            return report_to(
                plans,
                limits=limits,
                hook=hook,
                run_id=run_id,
                warnings=warnings,
                guards=guards,
                readback=readback,
                skill=skill,
            )

        if hook is not None:
            return go(hook)
        # one writer per key space (state/keyspace.py): taken before anything is sent
        spaces = key_spaces(target.state_identity, run_steps)
        if not request.state:  # ref fields were refused above
            with hold_key_spaces(spaces, pipeline=name, wait=request.wait_for_lock):
                return go(None)
        if options.dry_run:
            with dry_run_refs(state_db, key, configs, client.list_records) as refs:
                return go(refs)
        warnings = [*warnings]  # what the check of the target finds joins the report's
        # a run of the whole pipeline compares each step's volume with its healthy runs
        whole = not partial and steps is None
        guards = (
            VolumeGuards(configs, {}, allow_mass_deletes=request.allow_mass_deletes)
            if whole
            else None
        )
        settings = HookSettings(
            configs=configs,
            deleter=lambda object_type, rid: delete_record(client, object_type, rid),
            lookup=client.list_records,  # ref: {lookup: service}
            reader=client,  # the check of the target before a step decides
            notes=warnings,
            allow_mass_deletes=request.allow_mass_deletes,
            mirror_deletes=not partial,  # a retry's source is only the failed rows
            volume_check=guards.after_read if guards is not None else None,
        )
        with ExitStack() as stack:
            try:
                state = stack.enter_context(
                    open_state(
                        key,
                        request.state_db,
                        run_id,
                        full_refresh=request.full_refresh,
                        resend_in_doubt=request.resend_in_doubt,
                        durable=request.durable_state,
                        lock_name=name,
                        key_spaces=spaces,
                        wait_for_lock=request.wait_for_lock,
                        settings=settings,
                        store=store,
                    )
                )
            except _STATE_ERRORS as exc:  # nothing was sent yet
                raise state_write_error(state_db, exc, sent=False) from None
            try:
                run_id = state.run_id  # a resumed run keeps the id of the attempt that died
                if guards is not None:
                    runs = RunHistory(state.store)
                    guards.baselines = {
                        s.step_name: runs.baseline(key, s.step_name, s.mapping)
                        for s in pipeline.steps
                    }
                result = go(state, guards)
                state.finish("aborted" if result.error is not None else "finished")
                record_run(
                    state.store,
                    key,
                    result,
                    notify=notify,
                    history=pipeline.history,
                    whole_run=whole,
                    runtime=time.monotonic() - began,
                    env=env,
                )
            except _STATE_ERRORS as exc:  # the report's own are RunAborted already
                raise state_write_error(state_db, exc, sent=True) from None
        return result
    finally:
        try:
            kept.close()
        finally:
            if own:
                http_client.close()

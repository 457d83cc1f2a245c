"""The orchestrator of one run: target → schema → steps in order → report.

:func:`run_plans` runs already-built steps (any iterable of PreparedRow per step) and writes the
report; :func:`run_pipeline` builds the steps from a pipeline file with
:func:`recordsync.prepare.prepare_step` and calls it.

Stops: an authentication failure or a circuit breaker stops the run; an unknown object type
stops its step only; a run that cannot fetch the schema or the users sends nothing. A
configuration or source error (say, a byte that is not UTF-8 deep in a later step's file)
stops the run too; once something was sent it is returned as :class:`RunAborted` (exit 3),
since exit 2 promises that nothing was sent. Either way every source row read still gets a
line in results.csv (valid rows not sent, and every row of a run stopped before its first
step: ``failed`` with ``not sent: ...``), the report is written, and the error is returned
for the caller to turn into an exit code.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recordsync.config.after_run import SkillTrigger
from recordsync.core.chunk_report import ChunkReport
from recordsync.core.errors import (
    EXIT_OK,
    EXIT_ROWS_FAILED,
    AccountingError,
    AuthError,
    ConfigError,
    ObjectTypeNotFound,
    RecordsyncError,
    RunAborted,
    exit_code_for,
)
from recordsync.core.model import StepPlan
from recordsync.report.next_steps import describe_stop
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter, report_write_error
from recordsync.run.after_run import (
    outcome_of,
    rewrite,
    skill_payload,
    skill_warning,
    trigger,
    wanted,
)
from recordsync.run.target import Target
from recordsync.run.verify import ReadBack, not_verified
from recordsync.run.volume import VolumeGuards
from recordsync.send.breaker import CircuitBreaker
from recordsync.send.client import RecordServiceClient
from recordsync.send.sender import ChunkSender
from recordsync.send.step import ChunkHook, Progress, SendOptions, StepRunner
from recordsync.tuning.switching import prompt_switching

log = logging.getLogger(__name__)


class NullProgress:
    def step_started(self, plan: StepPlan) -> None:
        pass

    def rows_done(self, count: int) -> None:
        pass

    def chunk_done(self, step: str, report: ChunkReport) -> None:
        pass

    def step_finished(self, tally: StepTally) -> None:
        pass


def utc_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(pipeline: str, moment: datetime | None = None) -> str:
    """``20261122T013000Z-nightly-ab12``."""
    moment = moment or datetime.now(UTC)
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in pipeline)[:40] or "run"
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}-{safe}-{secrets.token_hex(2)}"


@dataclass(slots=True)
class RunResult:
    """What a run came to: the summary written, where, and the error that stopped it."""

    summary: dict[str, Any]
    report_dir: Path
    error: RecordsyncError | None = None
    tallies: list[StepTally] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return exit_code_for(self.error)
        if not self.summary["accounting_ok"]:
            return exit_code_for(AccountingError("accounting mismatch"))
        t = self.summary["totals"]
        # rows without a record of their own holding their values (report.tally.not_ok)
        bad = t["rows_not_ok"] + t.get("delete_failed", 0)
        # mirror deletes skipped: a malformed line may hide rows (which then have no record)
        skipped = any(s.get("mirror_deletes_skipped") for s in self.summary["steps"])
        # a step's source far smaller than in the last healthy runs (run.volume)
        guarded = bool(self.summary.get("guards"))
        # records read back that differ from what was sent, beyond a step's max_mismatch
        differ = (self.summary.get("verify") or {}).get("failed")
        return EXIT_ROWS_FAILED if bad or skipped or guarded or differ else EXIT_OK


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run while it wrote its report: ``report_dir`` holds what it
    did so far (results.csv), and no report.md. The state store's run is left unfinished, so
    the next run of the pipeline resumes it (as after a kill)."""

    def __init__(self, report_dir: Path) -> None:
        super().__init__(str(report_dir))
        self.report_dir = report_dir


@dataclass(frozen=True, slots=True)
class RunLimits:
    max_failure_rate: float | None = None
    breaker_min_rows: int = 10
    max_creates: int | None = None


def run_plans(
    plans: Iterable[StepPlan],
    *,
    pipeline: str,
    report_root: Path,
    options: SendOptions,
    client: RecordServiceClient | None,
    target: Target | None = None,
    limits: RunLimits | None = None,
    progress: Progress | None = None,
    hook: ChunkHook | None = None,
    run_id: str | None = None,
    retry_of: str | None = None,
    pipeline_file: str | None = None,
    warnings: list[str] | None = None,
    stopped: RecordsyncError | None = None,
    guards: VolumeGuards | None = None,
    readback: ReadBack | None = None,
    skill: SkillTrigger | None = None,
    list_unchanged: bool = False,
) -> RunResult:
    """Run the steps in order and write the report. ``client=None`` with ``dry_run`` only.

    ``stopped``: the run stopped before its first step (the schema or users could not be
    fetched): nothing is sent, every step is reported with every row ``failed`` (not sent).
    ``guards``: the steps' source-volume guards (:mod:`recordsync.run.volume`); a step whose
    guard says ``skip_step`` is reported with every row not sent.
    ``readback``: each step's sample read back once the step is over
    (:mod:`recordsync.run.verify`); ``skill``: triggered once the report is written, when
    the run's outcome is one it lists (:mod:`recordsync.run.after_run`).
    ``list_unchanged``: results.csv lists unchanged rows too (else they are counted only)."""
    if client is None and not options.dry_run:
        raise ValueError("a real run needs a client")
    started = datetime.now(UTC)
    run_id = run_id or new_run_id(pipeline, started)
    report_dir = report_root / run_id
    if report_dir.exists():  # a resumed run: keep the partial report of the attempt that died
        n = 1
        while report_dir.with_name(f"{run_id}.partial-{n}").exists():
            n += 1
        report_dir.rename(report_dir.with_name(f"{run_id}.partial-{n}"))
    try:
        writer = ReportWriter(
            report_dir, dry_run=options.dry_run, list_unchanged=list_unchanged
        )
    except OSError as exc:
        raise ConfigError(
            f"cannot create the report directory: {exc.strerror}",
            file=str(report_dir),
            hint="choose a writable directory with --report-dir or the pipeline's report.directory",
        ) from None
    limits = limits or RunLimits()
    breaker = CircuitBreaker(limits.max_failure_rate, limits.breaker_min_rows, limits.max_creates)

    def make_sender(object_type: str) -> ChunkSender:
        assert client is not None
        return ChunkSender(client, object_type)

    runner = StepRunner(
        writer,
        options,
        breaker,
        progress or NullProgress(),
        None if options.dry_run else make_sender,
        hook,
        readback.watch if readback is not None and not options.dry_run else None,
    )
    stop: RecordsyncError | None = stopped
    step_errors: list[RecordsyncError] = []
    try:
        for plan in plans:
            if stop is not None:
                runner.drain(plan, stop, unchecked=stopped is not None)
                continue
            try:
                skip = guards.before_step(plan) if guards is not None else None
                if skip is not None:
                    runner.drain(plan, skip)
                    continue
                # the sender thread takes the interpreter lock promptly when an answer arrives
                with nullcontext() if options.dry_run else prompt_switching():
                    runner.run(plan)
                if readback is not None and not options.dry_run:
                    readback.after_step(plan)  # before a later step writes the same records
            except ObjectTypeNotFound as exc:
                step_errors.append(exc)
                log.error("step %s aborted: %s", plan.name, exc)
            except AuthError as exc:
                stop = _with_target_hint(exc, target)
            except RecordsyncError as exc:
                stop = _after_sends(exc, writer.tallies, options.dry_run)
    except KeyboardInterrupt:
        writer.abandon()
        raise Interrupted(report_dir) from None
    except BaseException:
        writer.abandon()
        raise
    attempts = 1
    if hook is not None:  # a resumed run counts every attempt's chunks
        attempts = hook.attempts()
        for tally in writer.tallies:
            tally.chunks += hook.chunks_before(tally.step)
    error = stop if stop is not None else (step_errors[0] if step_errors else None)
    meta = {
        "run_id": run_id,
        "attempts": attempts,
        "pipeline": pipeline,
        "pipeline_file": pipeline_file,
        "target": target.name if target is not None else None,
        "target_origin": target.origin if target is not None else None,
        "started_at": utc_stamp(started),
        "finished_at": utc_stamp(datetime.now(UTC)),
        "report_dir": str(report_dir),
        "aborted": str(stop) if stop is not None else None,
        "stop": describe_stop(error, target),  # its kind and next step (report.next_steps)
        "retry_of": retry_of,
        "warnings": list(warnings or []),
        "guards": guards.as_json() if guards is not None else [],
    }
    if readback is not None:
        if options.dry_run:
            meta["verify"] = not_verified("dry run: nothing was written")
        else:
            checked = readback.summary(report_dir)
            if stop is not None:
                checked["stopped"] = "the run stopped: the steps after it were not read back"
            meta["verify"] = checked
    try:
        summary = writer.finish(meta)
    except OSError as exc:
        writer.abandon()
        raise report_write_error(report_dir, exc) from None
    result = RunResult(summary, report_dir, error, writer.tallies)
    if skill is not None and client is not None and not options.dry_run:
        _after_run(result, client, skill, readback)
    return result


def _after_run(
    result: RunResult,
    client: RecordServiceClient,
    skill: SkillTrigger,
    readback: ReadBack | None,
) -> None:
    """Trigger the skill when the run's outcome asks for it; the report says what happened
    (a failed trigger is a warning: the exit code stays the run's)."""
    summary, code = result.summary, result.exit_code
    outcome = outcome_of(code)
    if not wanted(skill, outcome):
        summary["after_run"] = {
            "skill": {
                "id": skill.id,
                "when": list(skill.when),
                "outcome": outcome,
                "triggered": False,
                "skipped": f"the run's outcome is {outcome}",
            }
        }
    else:
        changed = readback.watch.changed if readback is not None else {}
        payload = skill_payload(summary, code, result.tallies, changed)
        done = trigger(client, skill, payload)
        summary["after_run"] = {"skill": done}
        warning = skill_warning(done)
        if warning is not None:
            summary["warnings"] = [*summary.get("warnings", []), warning]
    try:
        rewrite(result.report_dir, summary, result.tallies)
    except OSError as exc:
        raise report_write_error(result.report_dir, exc) from None


def _after_sends(exc: RecordsyncError, tallies: list[StepTally], dry_run: bool) -> RecordsyncError:
    """A configuration or source error that stops a run after requests went out (chunks or
    mirror deletes) is returned as :class:`RunAborted`: exit 2 means nothing was sent."""
    if not isinstance(exc, ConfigError) or dry_run:
        return exc
    chunks = sum(t.chunks for t in tallies)
    deletes = sum(t.deleted + t.delete_failed for t in tallies)
    if not chunks and not deletes:
        return exc
    sent = f"{chunks} chunk(s)" + (f" and {deletes} mirror delete(s)" if deletes else "")
    aborted = RunAborted(
        f"run aborted after {sent} were sent: {exc.message}",
        hint=(f"{exc.hint}; " if exc.hint else "")
        + "results.csv lists every row sent before the error; fix it and run again",
    )
    aborted.__cause__ = exc
    return aborted


def _with_target_hint(exc: AuthError, target: Target | None) -> AuthError:
    if target is None:
        return exc
    hint = target.auth_hint()
    return exc.with_hint(hint)


def limits_from(send: Any, overrides: dict[str, Any]) -> tuple[SendOptions, RunLimits]:
    """Send options and breaker limits from the pipeline's ``send:`` block and CLI overrides
    (``send`` may be None: defaults, no canary, no breakers)."""
    chunk = int(overrides.get("chunk_size") or getattr(send, "chunk_size", None) or 100)
    canary = overrides.get("canary_size")
    if canary is None:
        canary = getattr(send, "canary_chunk_size", None)
    breaker = getattr(send, "circuit_breaker", None)
    rate = overrides.get("max_failure_rate", getattr(breaker, "max_failure_rate", None))
    creates = overrides.get("max_creates", getattr(breaker, "max_creates", None))
    canary_size = min(int(canary), chunk) if canary else None
    options = SendOptions(chunk, canary_size, bool(overrides.get("dry_run")))
    return options, RunLimits(rate, max(10, canary_size or 10), creates)

"""A report's "Next steps": what to do about what stopped the run and about the rows not ok.

Two parts, each made in one place:

- :func:`describe_stop`: the error that stopped the run (or a step) → its ``kind`` and its
  next step. The kinds follow the branches of the error tree (:mod:`recordsync.core.errors`), the
  most specific first (:data:`STOP_KINDS`). The runner writes the result into summary.json as
  ``stop``, so the report can be rendered from summary.json alone.
- :func:`next_steps`: the list report.md and report.html both show (``code`` in backticks;
  report.html turns it into markup), from summary.json: the stop's next step first, then one
  line per kind of row not ok.

``recordsync retry`` is suggested only for rows a resend can fix: rows sent that failed for
another reason than a value the service rejected (timeouts, rate limits, outages), and rows
in doubt. Never for rows not sent because the run stopped (the stop's cause is fixed first,
then the next run sends them), nor for rejected values or invalid rows (fixed in the source
or the mapping first).

No API key ever appears here: an authentication failure names where the key came from (an
environment variable, a profile), never the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from recordsync.core.errors import (
    ApiError,
    AuthError,
    ConfigError,
    ObjectTypeNotFound,
    RecordsyncError,
    RetriableApiError,
    RunAborted,
)


class Target(Protocol):
    """What the report says of a run's target (:class:`recordsync.run.target.Target`)."""

    @property
    def base_url(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def key_origin(self) -> str: ...
    @property
    def embedded(self) -> bool: ...
    def auth_hint(self) -> str: ...


BREAKER = "circuit breaker:"
"""How the circuit breakers' RunAborted messages begin (recordsync.send.breaker)."""


def _where_target(target: Target | None) -> str:
    if target is None:
        return "the target"
    return f"{target.base_url} (target from {target.origin})"  # a base URL holds no secret


def _auth(exc: RecordsyncError, target: Target | None) -> str:
    if target is not None and target.embedded:
        fix = target.auth_hint()
    elif target is not None:
        fix = (
            f"it comes from {target.key_origin} (target from {target.origin}): set it to a "
            f"valid key for {target.base_url}"
        )
    else:
        fix = exc.hint or "set the API key's environment variable to a valid key"
    return f"fix the API key: {fix}; then run again"


def _unreachable(exc: RecordsyncError, target: Target | None) -> str:
    return (
        f"the service could not be reached at {_where_target(target)}: check the base URL "
        "(--base-url, RECORDSYNC_BASE_URL or the profile's base_url) and the network (DNS, "
        "proxy, firewall, VPN), then run again"
    )


def _unavailable(exc: RecordsyncError, target: Target | None) -> str:
    status = exc.status if isinstance(exc, ApiError) else None
    return (
        f"the service at {_where_target(target)} kept answering HTTP {status} after every "
        "resend: run again once it answers (check its status page)"
    )


def _object_type(exc: RecordsyncError, target: Target | None) -> str:
    return (
        f"an object type was not found on {_where_target(target)}: fix `object_type` in the "
        "step's mapping, or run against the target that has it (the other steps ran)"
    )


def _service(exc: RecordsyncError, target: Target | None) -> str:
    status = exc.status if isinstance(exc, ApiError) else None
    answer = f" (HTTP {status})" if status is not None else ""
    hint = f": {exc.hint}" if exc.hint else ""
    return (
        f"the service refused a request{answer}{hint}; resending cannot fix it: see the "
        "error above, fix its cause, then run again"
    )


def _config(exc: RecordsyncError, target: Target | None) -> str:
    cause = exc if isinstance(exc, ConfigError) else exc.__cause__
    assert isinstance(cause, ConfigError)
    where = ""
    if cause.file is not None:
        where = cause.file + (f":{cause.line}" if cause.line is not None else "")
    if cause.key is not None:
        where = f"{where} [{cause.key}]" if where else f"[{cause.key}]"
    what = f"fix {where}" if where else "fix the configuration"
    how = f": {cause.hint}" if cause.hint else f" ({cause.detail})"
    return f"{what}{how}; then run again"


def _breaker(exc: RecordsyncError, target: Target | None) -> str:
    if "max_creates" in exc.message:
        return (
            "the max_creates circuit breaker stopped the run: check the mappings' match_by "
            "keys (rows that should update are creating); raise "
            "send.circuit_breaker.max_creates in the pipeline only if this many creates are "
            "expected; then run again"
        )
    return (
        "the failure-rate circuit breaker stopped the run: fix what the failure reasons show "
        "(the source or the mapping), then run again; raise "
        "send.circuit_breaker.max_failure_rate in the pipeline only if such failures are "
        "expected"
    )


def _aborted(exc: RecordsyncError, target: Target | None) -> str:
    if exc.hint:
        return exc.hint
    return "run again: the next run sends the rows this one did not"


def _other(exc: RecordsyncError, target: Target | None) -> str:
    return exc.hint or "see the error above, fix its cause, then run again"


def _config_cause(exc: RecordsyncError) -> bool:
    return isinstance(exc, ConfigError) or isinstance(exc.__cause__, ConfigError)


def _is(cls: type[RecordsyncError]) -> Callable[[RecordsyncError], bool]:
    return lambda exc: isinstance(exc, cls)


Describe = Callable[[RecordsyncError, Target | None], str]

STOP_KINDS: tuple[tuple[str, Callable[[RecordsyncError], bool], Describe], ...] = (
    ("auth", _is(AuthError), _auth),
    ("object_type", _is(ObjectTypeNotFound), _object_type),
    ("unreachable", lambda e: isinstance(e, RetriableApiError) and e.status is None, _unreachable),
    ("unavailable", _is(RetriableApiError), _unavailable),
    ("service", _is(ApiError), _service),  # any other FatalApiError (or answer)
    ("config", _config_cause, _config),  # also a RunAborted caused by one (found after a send)
    ("breaker", lambda e: isinstance(e, RunAborted) and e.message.startswith(BREAKER), _breaker),
    ("aborted", _is(RunAborted), _aborted),
    ("error", _is(RecordsyncError), _other),
)
"""Error → (kind, next step), the most specific first: the one mapping of what stopped a run
to what to do about it."""


def describe_stop(error: RecordsyncError | None, target: Target | None) -> dict[str, str] | None:
    """summary.json's ``stop``: ``kind`` (see :data:`STOP_KINDS`), ``error`` (its class) and
    ``next_step``; None for a run nothing stopped."""
    if error is None:
        return None
    for kind, matches, describe in STOP_KINDS:
        if matches(error):
            return {
                "kind": kind,
                "error": type(error).__name__,
                "next_step": describe(error, target),
            }
    raise AssertionError("every RecordsyncError has a kind")  # pragma: no cover


def next_steps(summary: Mapping[str, Any]) -> list[str]:
    """The "Next steps" of a report (``code`` in backticks), [] when there is nothing to do."""
    t = summary.get("totals") or {}
    steps = summary.get("steps") or []
    dry = bool(summary.get("dry_run"))
    stop = summary.get("stop")
    items: list[str] = []
    if stop:
        items.append(str(stop["next_step"]))
    if t.get("rows_not_ok"):
        items.append(
            "failed, invalid, in-doubt, duplicate and merged rows are in `failures.csv` "
            "(with `_error`)"
        )
    if t.get("rows_merged") or t.get("merged"):
        items.append(
            "merged rows: make them differ from the row named in `_error` (another domain, "
            "name or e-mail), or declare `merges: expected` in the mapping"
        )
    if t.get("delete_failed"):
        items.append(
            "failed mirror deletes are in the run's log (key, record id, error); the next run "
            "tries them again"
        )
    if t.get("rows_invalid"):
        items.append(
            "invalid rows: fix the source or the mapping as each failure reason above says; "
            "the next run sends them"
        )
    not_sent = int(t.get("not_sent") or 0)
    if not_sent:
        when = "once the stop above is dealt with" if stop else "once its cause is fixed"
        what = "checked" if dry else "sent"
        items.append(
            f"{not_sent} row(s) were not sent because the run stopped first: {when}, run "
            f"again and they are {what}"
        )
    if t.get("in_doubt"):
        items.append("in-doubt rows may have been applied: check them in the target first")
    rejected = sum(int(s.get("rejected_values") or 0) for s in steps)
    if rejected:
        items.append(
            f"{rejected} failed row(s) have a value the service rejected (`Validation failed`): "
            "fix the value in the source or the mapping (e.g. a value_map), then run again; a "
            "retry without a fix sends the same value and fails the same way"
        )
    retryable = 0 if dry else int(t.get("failed") or 0) - rejected - not_sent
    if retryable > 0 or (t.get("in_doubt") and not dry):
        where = summary.get("report_dir") or "<this directory>"
        other = "other " if rejected or not_sent else ""
        items.append(
            f"resend the {other}failed and in-doubt rows (transient errors: timeouts, rate "
            "limits, outages): "
            f"`recordsync retry {where}`"
        )
    return items

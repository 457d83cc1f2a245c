"""The one exception tree of recordsync, grouped by what the caller should do next.

    RecordsyncError                 root; every error recordsync raises on purpose
    ├── ConfigError                 fix a config file, flag or env value, then run again   (exit 2)
    │   └── SourceError             a source file cannot be opened or read at all          (exit 2)
    ├── RowError                    one source row is bad: reported, the run goes on      (row)
    ├── ApiError                    the record service answered badly or not at all
    │   ├── RetriableApiError       429, 5xx, timeouts, dropped connections: resend later
    │   └── FatalApiError           the run (or step) cannot go on                          (exit 3)
    │       ├── AuthError           401 or a 3xx redirect: wrong or missing API key
    │       └── ObjectTypeNotFound  404 on an object type: abort that step
    ├── AccountingError             the report does not add up                              (exit 1)
    ├── VolumeDropped               a step's source shrank against the last healthy runs:
    │                               the step was skipped (volume_guard: on_drop skip_step) (exit 1)
    └── RunAborted                  a circuit breaker or lock stopped the run               (exit 3)

A ConfigError found after something was sent (a source unreadable part-way through) is
turned into a RunAborted by :func:`recordsync.run.runner.run_plans`: exit 2 promises that nothing
was sent.

Messages name the culprit (file, line, key, row, column, status and path) and say what to
do next. They never contain secrets: API keys are typed as :class:`recordsync.core.secret.Secret`.

Exit codes (the one table, also in docs/run.md, "Exit codes"):

    0  every row ok
    1  the run finished, with failed, invalid or in-doubt rows (or an accounting mismatch)
    2  configuration or usage error: nothing was sent
    3  aborted: authentication failure, unknown object type, circuit breaker, lock held, a
       configuration or source error found after something was sent, or any other exception
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK = 0
EXIT_ROWS_FAILED = 1
EXIT_CONFIG = 2
EXIT_ABORTED = 3


class RecordsyncError(Exception):
    """Root of every error recordsync raises on purpose."""

    exit_code: ClassVar[int] = EXIT_ABORTED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


class ConfigError(RecordsyncError):
    """A config file, flag or environment value is wrong. Nothing was sent (a run that finds
    one after a send returns it as :class:`RunAborted`)."""

    exit_code = EXIT_CONFIG

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.detail = message
        """The message alone, without file, line and key."""
        where = ""
        if file is not None:
            where = file + (f":{line}" if line is not None else "")
        if key is not None:
            where = f"{where} [{key}]" if where else f"[{key}]"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)


class SourceError(ConfigError):
    """A source file cannot be opened or read at all (missing, wrong format, unreadable)."""


class RowError(RecordsyncError):
    """One source row cannot be turned into a valid batch input. Reported; the run goes on."""

    exit_code = EXIT_ROWS_FAILED

    def __init__(
        self,
        message: str,
        *,
        column: str | None = None,
        value: object = None,
        rule: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.column = column
        self.value = value
        self.rule = rule
        super().__init__(message, hint=hint)


class ApiError(RecordsyncError):
    """The record service answered with an error, or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str | None = None,
        path: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.detail = message
        """The service's (or the network's) message alone, without method, path and status."""
        where = " ".join(p for p in (method, path) if p)
        prefix = f"{where}: " if where else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{prefix}{code}{message}", hint=hint)


class RetriableApiError(ApiError):
    """A transient failure (429, 5xx, timeout, dropped connection): resending may succeed."""


class FatalApiError(ApiError):
    """A failure that resending cannot fix; the run or the step stops."""

    exit_code = EXIT_ABORTED


class AuthError(FatalApiError):
    """401, or a redirect (the hosted service's answer to a bad key on some routes)."""

    def with_hint(self, hint: str) -> AuthError:
        """The same error with a hint saying where the key came from and what to fix."""
        return AuthError(
            self.detail, status=self.status, method=self.method, path=self.path, hint=hint
        )


class ObjectTypeNotFound(FatalApiError):
    """404 on an object type: the step cannot run against this target."""


class AccountingError(RecordsyncError):
    """The reconciliation check failed: source rows and outcomes do not add up."""

    exit_code = EXIT_ROWS_FAILED


class VolumeDropped(RecordsyncError):
    """A step's source holds far fewer rows than in the last healthy runs, and its mapping's
    ``volume_guard`` says ``on_drop: skip_step``: the step sent nothing (exit 1)."""

    exit_code = EXIT_ROWS_FAILED


class RunAborted(RecordsyncError):
    """A circuit breaker, a held lock, the user, or an error found after a send stopped the run."""

    exit_code = EXIT_ABORTED


def exit_code_for(error: BaseException) -> int:
    """The one place that maps an error to a process exit code."""
    if isinstance(error, RecordsyncError):
        return error.exit_code
    return EXIT_ABORTED

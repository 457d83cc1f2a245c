"""One pipeline run for an orchestrator: the run, its outcome as metadata, success or failure.

The target is chosen exactly as ``recordsync run`` chooses it (``--profile``/``--base-url``
equivalents, then ``RECORDSYNC_BASE_URL``/``RECORDSYNC_PROFILE``, then the pipeline's
``target:``, else the embedded sandbox): :func:`run_pipeline` does it. Keys come only from
the worker's environment, never from a parameter (an orchestrator shows its task parameters
in its UI). Outcomes follow the CLI's exit codes: 0 succeeds; 1 (rows not ok) fails unless
``accept_rows_not_ok``; 2 (nothing sent) and 3 (aborted) always fail. Only 3 is worth
retrying.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from recordsync import (
    EXIT_ABORTED,
    EXIT_OK,
    EXIT_ROWS_FAILED,
    ConfigError,
    RecordsyncError,
    RunRequest,
    exit_code_for,
    run_pipeline,
    state_location,
)
from recordsync.report.reason import why_rows_not_ok
from recordsync.report.tally import COUNT_COLUMNS
from recordsync.run.target import sandbox_db_for

STEP_COUNTS = (*(key for _, key in COUNT_COLUMNS), "deleted", "delete_failed", "rows_not_ok")
"""The per-step counts an orchestrator shows (summary.json has them all)."""


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """The ``recordsync run`` options a task may set, in one place: :func:`run_sync`, the
    Dagster asset and the Airflow operator take each as a keyword argument of its name (or
    all of them as ``options=``). The API key is not one: it comes from the environment."""

    dry_run: bool = False
    profile: str | None = None
    base_url: str | None = None
    report_dir: str | Path | None = None
    state_db: str | Path | None = None
    full_refresh: bool = False
    sandbox_seed: str | Path | None = None

    @classmethod
    def take(cls, kwargs: dict[str, Any], base: SyncOptions | None = None) -> SyncOptions:
        """``base`` (else the defaults) with the options found in ``kwargs``, which this
        removes from it (what is left is the orchestrator's own keyword arguments)."""
        found = {name: kwargs.pop(name) for name in OPTION_NAMES if name in kwargs}
        return replace(base or cls(), **found)

    def request(self, pipeline: Path) -> RunRequest:
        """The run of ``pipeline`` with these options, as ``recordsync run -q`` makes it."""
        seed = Path(self.sandbox_seed) if self.sandbox_seed is not None else None
        return RunRequest(
            pipeline,
            dry_run=self.dry_run,
            base_url=self.base_url,
            profile=self.profile,
            report_dir=Path(self.report_dir) if self.report_dir is not None else None,
            state_db=state_location(self.state_db) if self.state_db is not None else None,
            full_refresh=self.full_refresh,
            sandbox_db=sandbox_db_for(seed),
            sandbox_seed=seed,
        )


OPTION_NAMES = tuple(f.name for f in fields(SyncOptions))


class SyncOptionArgs(TypedDict, total=False):
    """:class:`SyncOptions` as keyword arguments of :func:`run_sync`, so that a type checker
    checks their names and types (a test keeps the two lists the same)."""

    dry_run: bool
    profile: str | None
    base_url: str | None
    report_dir: str | Path | None
    state_db: str | Path | None
    full_refresh: bool
    sandbox_seed: str | Path | None


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    """A finished (or refused) run: its exit code, summary and report, as the CLI sees them."""

    pipeline: Path
    exit_code: int
    summary: Mapping[str, Any] | None
    """summary.json; None when the run was refused before it wrote a report (exit 2, or 3 for
    a lock held)."""
    report_dir: Path | None
    error: str | None
    """Why the run stopped or was refused (recordsync's message: it never holds a key)."""

    @property
    def report_html(self) -> Path | None:
        return None if self.report_dir is None else self.report_dir / "report.html"

    @property
    def rows_not_ok(self) -> bool:
        return self.exit_code == EXIT_ROWS_FAILED

    def failure(self, accept_rows_not_ok: bool = False) -> str | None:
        """Why the orchestrator's task fails, or None when it succeeds."""
        if self.exit_code == EXIT_OK or (self.rows_not_ok and accept_rows_not_ok):
            return None
        return f"recordsync run {self.pipeline} exited {self.exit_code}: {self.reason()}"

    def retry_may_help(self) -> bool:
        """True for exit 3 only (aborted: the service was down, a lock was held, ...). A
        configuration error (2) stays until someone fixes it; rows not ok (1) are the source's
        or the mapping's to fix (failed and in-doubt rows are sent again by the next run)."""
        return self.exit_code == EXIT_ABORTED

    def reason(self) -> str:
        """One line: what went wrong and where to look (empty for exit 0)."""
        if self.error is not None:
            where = f" (report: {self.report_dir})" if self.report_dir is not None else ""
            return f"{self.error}{where}"
        if self.summary is None or self.report_dir is None or self.exit_code == EXIT_OK:
            return ""
        if not self.summary["accounting_ok"]:
            return f"the report does not add up (accounting mismatch): see {self.report_dir}"
        # the command line's own line for exit 1
        return why_rows_not_ok(dict(self.summary), self.report_dir) or f"see {self.report_dir}"

    def metadata(self) -> dict[str, Any]:
        """Flat, JSON-able metadata: the exit code, totals, accounting_ok, warnings, the report
        and per-step counts (``steps``: step name → counts)."""
        meta: dict[str, Any] = {"pipeline": str(self.pipeline), "exit_code": self.exit_code}
        if self.error is not None:
            meta["error"] = self.error
        if self.summary is None or self.report_dir is None:
            return meta
        s = self.summary
        meta.update(
            run_id=s["run_id"],
            target=s.get("target"),
            dry_run=bool(s.get("dry_run")),
            accounting_ok=bool(s["accounting_ok"]),
            report_dir=str(self.report_dir),
            report_html=str(self.report_html),
            warnings=list(s.get("warnings") or []),
            mirror_deletes_skipped=[
                st["step"] for st in s["steps"] if st.get("mirror_deletes_skipped")
            ],
            totals={k: v for k, v in s["totals"].items() if isinstance(v, int)},
            steps={st["step"]: {k: st.get(k, 0) for k in STEP_COUNTS} for st in s["steps"]},
        )
        return meta


def run_sync(
    pipeline: str | Path, options: SyncOptions | None = None, **kwargs: Unpack[SyncOptionArgs]
) -> SyncOutcome:
    """Run a pipeline file as ``recordsync run -q`` does and return its outcome; ``kwargs``:
    :class:`SyncOptions` by name (``state_db=...``), over ``options``.

    Errors recordsync names become the outcome (exit 2 or 3, as the CLI's); anything else (a
    bug) propagates with its traceback, which the orchestrator shows."""
    path = Path(pipeline)
    request = replace(options or SyncOptions(), **kwargs).request(path)
    try:
        if not path.is_file():
            raise ConfigError("the pipeline file does not exist", file=str(path))
        result = run_pipeline(request)
    except RecordsyncError as exc:
        return SyncOutcome(path, exit_code_for(exc), None, None, str(exc))
    error = str(result.error) if result.error is not None else None
    return SyncOutcome(
        path, result.exit_code, result.summary, result.report_dir.resolve(), error
    )

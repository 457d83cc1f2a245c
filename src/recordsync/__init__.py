"""recordsync: push CSV and Parquet exports into a CRM record service through batch upserts.

The public surface (``__all__``; anything else is internal and may move)::

    from recordsync import RunRequest, run_pipeline

    result = run_pipeline(RunRequest(Path("pipelines/nightly.yaml")))
    result.exit_code     # 0, 1 (rows not ok), 2 (nothing sent), 3 (aborted)
    result.report_dir    # reports/<run_id>/: results.csv, failures.csv, summary.json, ...

Errors share one root, :class:`RecordsyncError`, with branches by what to do next; each
carries its exit code (:func:`exit_code_for`). ``state_location`` spells a ``--state-db``
(a file, or a ``postgresql://`` URL) for ``RunRequest(state_db=...)``; :class:`Tuning` asks
a run for the process-wide tweaks the command line turns on (:mod:`recordsync.tuning`).

The names are resolved when first used, so that ``import recordsync`` (and the command
line's start-up) loads none of the run's stack until it is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from recordsync.core.version import __version__

if TYPE_CHECKING:
    from recordsync.core.errors import (
        EXIT_ABORTED,
        EXIT_CONFIG,
        EXIT_OK,
        EXIT_ROWS_FAILED,
        AccountingError,
        ApiError,
        AuthError,
        ConfigError,
        FatalApiError,
        ObjectTypeNotFound,
        RecordsyncError,
        RetriableApiError,
        RowError,
        RunAborted,
        SourceError,
        VolumeDropped,
        exit_code_for,
    )
    from recordsync.run.pipeline import RunRequest, run_pipeline
    from recordsync.run.runner import RunResult
    from recordsync.state.location import state_location
    from recordsync.tuning import Tuning

_WHERE = {
    "run_pipeline": "recordsync.run.pipeline",
    "RunRequest": "recordsync.run.pipeline",
    "RunResult": "recordsync.run.runner",
    "state_location": "recordsync.state.location",
    "Tuning": "recordsync.tuning",
    **dict.fromkeys(
        (
            "RecordsyncError",
            "ConfigError",
            "SourceError",
            "RowError",
            "ApiError",
            "RetriableApiError",
            "FatalApiError",
            "AuthError",
            "ObjectTypeNotFound",
            "AccountingError",
            "RunAborted",
            "VolumeDropped",
            "exit_code_for",
            "EXIT_OK",
            "EXIT_ROWS_FAILED",
            "EXIT_CONFIG",
            "EXIT_ABORTED",
        ),
        "recordsync.core.errors",
    ),
}
"""Public name → the module that defines it."""

__all__ = [
    "EXIT_ABORTED",
    "EXIT_CONFIG",
    "EXIT_OK",
    "EXIT_ROWS_FAILED",
    "AccountingError",
    "ApiError",
    "AuthError",
    "ConfigError",
    "FatalApiError",
    "ObjectTypeNotFound",
    "RecordsyncError",
    "RetriableApiError",
    "RowError",
    "RunAborted",
    "RunRequest",
    "RunResult",
    "SourceError",
    "Tuning",
    "VolumeDropped",
    "__version__",
    "exit_code_for",
    "run_pipeline",
    "state_location",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

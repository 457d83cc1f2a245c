"""Report files whose failed writes stop the run: a full disk or a lost mount while the
report is written is :class:`recordsync.core.errors.RunAborted` (exit 3), naming the directory
and the next step (:func:`report_write_error`). Used by :mod:`recordsync.report.writer`."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from recordsync.core.errors import RunAborted


def report_write_error(directory: Path, exc: OSError) -> RunAborted:
    """A report file cannot be written (a full disk, a lost mount): the run stops (exit 3)."""
    return RunAborted(
        f"cannot write the report in {directory}: {exc.strerror or exc}"
        + (f" (errno {exc.errno})" if exc.errno else "")
        + "; the run stopped",
        hint="free space on that disk (or give another --report-dir), then run again: a"
        " nightly sync with its state store resumes where this run stopped",
    )


class GuardedFile:
    """A text file whose failed writes stop the run with :func:`report_write_error`."""

    __slots__ = ("_directory", "_file")

    def __init__(self, file: IO[str], directory: Path) -> None:
        self._file = file
        self._directory = directory

    def write(self, text: str) -> int:
        try:
            return self._file.write(text)
        except OSError as exc:
            raise report_write_error(self._directory, exc) from None

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        try:
            self._file.close()
        except OSError as exc:  # the buffered rest could not be written
            raise report_write_error(self._directory, exc) from None

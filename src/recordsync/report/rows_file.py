"""A report's row files (``results.csv``, ``failures.csv``): plain CSV while they are small,
gzip-compressed (``results.csv.gz``, ``failures.csv.gz``) past :data:`GZIP_FROM` data lines.

A file streamed as rows come (results.csv) starts plain; when its line count passes the
threshold, what was written is compressed into the ``.gz`` file, the plain file is removed,
and the rest streams compressed. Either way there is one file per kind in a report directory:
:func:`find_rows_file` finds it and :func:`open_rows_file` reads it back as text (what
``recordsync retry`` does), whichever form it has. Any tool that reads gzip reads the
compressed form (``zcat``, ``pandas.read_csv``, DuckDB's ``read_csv``).

A failed write stops the run (:mod:`recordsync.report.file_guard`).
"""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path
from typing import IO

from recordsync.report.file_guard import GuardedFile, report_write_error

GZIP_FROM = 100_000
"""Data lines from which a row file is written compressed (about 10 MB of results.csv)."""
GZIP_LEVEL = 1
"""zlib's fastest level: a report's CSV lines compress about 10x at it, within a few percent
of level 6, for half its CPU."""
_TEXT_BUFFER = 1 << 20


def _gzip_writer(path: Path) -> tuple[gzip.GzipFile, io.TextIOWrapper]:
    raw = gzip.GzipFile(path, "wb", compresslevel=GZIP_LEVEL, mtime=0)
    text = io.TextIOWrapper(raw, encoding="utf-8", newline="", write_through=False)
    text._CHUNK_SIZE = _TEXT_BUFFER  # type: ignore[attr-defined]
    return raw, text


class RowsFile(GuardedFile):
    """A text file of CSV lines in ``directory`` named ``name`` (``results.csv``), written
    compressed to ``name + ".gz"`` once :meth:`count` has been told of more than
    ``gzip_from`` lines, or from the start with ``compress``; its failed writes stop the run
    as a :class:`GuardedFile`'s do."""

    __slots__ = ("_gzip_from", "compressed", "lines", "path")

    def __init__(
        self, directory: Path, name: str, *, gzip_from: int = GZIP_FROM, compress: bool = False
    ) -> None:
        self._gzip_from = gzip_from
        self.lines = 0
        self.compressed = False
        self.path = directory / name
        plain: IO[str] = open(self.path, "w", 1 << 20, "utf-8", newline="")  # noqa: SIM115
        super().__init__(plain, directory)
        if compress:
            self._compress()

    def count(self, lines: int) -> None:
        """``lines`` more data lines were written: past the threshold, compress."""
        self.lines += lines
        if self.lines > self._gzip_from and not self.compressed:
            self._compress()

    def _compress(self) -> None:
        """What was written so far into ``<name>.gz``; the rest goes there too."""
        plain = self.path
        target = plain.with_name(plain.name + ".gz")
        try:
            self._file.close()
            raw, text = _gzip_writer(target)
            with open(plain, "rb") as written:
                shutil.copyfileobj(written, raw, 1 << 20)
            plain.unlink()
        except OSError as exc:
            raise report_write_error(self._directory, exc) from None
        self._file = text
        self.path = target
        self.compressed = True


def find_rows_file(report_dir: Path, name: str) -> Path | None:
    """``report_dir / name`` or its compressed form ``name + ".gz"``, whichever exists (the
    plain one first); None when neither does."""
    for candidate in (report_dir / name, report_dir / (name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def open_rows_file(path: Path) -> IO[str]:
    """A row file as text for ``csv.reader``: plain, or gzip when its name ends ``.gz``."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, newline="", encoding="utf-8")


"""A few example rows per failure reason group, for report.md and report.html.

Each example is the source row number, the column the message names (when it names one the
row has) and that cell's value: enough to find the cell in the source without opening
failures.csv. A message that names no column of the row gives the first value it quotes
instead (the key of a reference or of a duplicate). At most :data:`PER_REASON` examples per
reason group, and the groups are bounded (:data:`recordsync.report.tally.MAX_REASONS`), so a
10M-row run keeps a few thousand at most. Values are kept raw; each renderer escapes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from recordsync.report.csvsafe import neutralise

PER_REASON = 5
"""Example rows kept per reason group (report.html shows them all, report.md the first 3)."""
MAX_VALUE = 80
"""Characters of a value or message shown; the full text is in failures.csv."""

_COLUMN = re.compile(r"""\bcolumn ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
_ESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True, slots=True)
class ReasonExample:
    """One failing row of a reason group."""

    source_file: str
    source_row: int
    column: str | None
    """The column the message names, when the row has it; else None."""
    value: str | None
    """That cell's value; with no column, the first value the message quotes, if any."""
    error: str
    key: str | None = None
    """The row's match key as sent or as it would have been (``email ann@x.io``), if any."""


def named_column(message: str) -> str | None:
    """The first column a failure message names (``column 'Email' → field 'email': ...``)."""
    m = _COLUMN.search(message)
    return _ESCAPE.sub(r"\1", m.group(1)[1:-1]) if m else None


def make_example(
    source_file: str,
    source_row: int,
    values: dict[str, Any],
    error: str,
    data: str | None,
    key: str | None = None,
) -> ReasonExample:
    """The example of a failing row: the cell of the column its message names, else ``data``
    (the first value the message quotes, :func:`recordsync.report.tally.message_value`)."""
    column = named_column(error)
    if column is not None and column in values:
        return ReasonExample(source_file, source_row, column, _text(values[column]), error, key)
    return ReasonExample(source_file, source_row, None, data, error, key)


def row_name(source_file: str, source_row: int, key: str | None = None) -> str:
    """A row as a reader finds it: ``contacts.csv row 12 (email ann@x.io)`` (the file's
    name; its path is in failures.csv)."""
    name = PurePath(source_file).name or source_file
    return f"{name} row {source_row}" + (f" ({shown(key, 60)})" if key else "")


def _text(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    return str(cell)


def shown(text: str, limit: int = MAX_VALUE) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def safe_cell(text: str, limit: int = MAX_VALUE) -> str:
    """:func:`shown`, formula-safe as in failures.csv (a table copied into a spreadsheet);
    a plain number (``-100``) is shown as it is: a spreadsheet reads it as that number."""
    text = shown(text, limit)
    return text if _NUMBER.fullmatch(text) else neutralise(text)


def example_text(example: ReasonExample) -> str:
    """One line for report.md: ``contacts.csv row 12 (name Omar Costa): 'john.doe@'`` (or
    the row's message when no value was kept)."""
    row = row_name(example.source_file, example.source_row, example.key)
    if example.value is not None:
        return f"{row}: {shown(example.value)!r}"
    return f"{row}: {shown(example.error)}"

"""Parent rows: a row whose reference found no record of an earlier step (``no 'companies'
record with key 'acme.com'``) often points at a row of that step that was itself not ok (an
invalid company). The report names that row, so that it is fixed first.

The keys looked for are those of the reference groups' example rows (a few per group); the
rows looked in are the not-ok rows of the referenced step, read once from failures.csv's
spool as it is turned into failures.csv. A row fits a key when one of its cells is the key
(ignoring case), or, for a key that is a domain, a cell is a URL or e-mail address of that
domain (``https://www.acme.com/about``): the ledger's own normalisation is the state
store's, which the report does not take; a cell that fits is named as "probably" the row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from recordsync.report.examples import ReasonExample
from recordsync.report.tally import StepTally

_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
MISSING_REF = re.compile(rf"no '((?:[^'\\]|\\.)*)' record with key ({_QUOTED})")
"""A reference that found no record: the step referred to and the key (quoted by repr)."""
NO_ROW_BY = re.compile(rf"= ({_QUOTED}) fits no row of step '((?:[^'\\]|\\.)*)'")
"""A reference by a field's value (``ref: {by: ...}``) that fits no row: the value, the step."""
_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?(?:www\.)?([^/:?#\s]+)", re.I)


def missing_ref(message: str) -> tuple[str, str] | None:
    """(step, key) of a reference that found no record, else None."""
    m = MISSING_REF.search(message)
    if m is not None:
        step, quoted = m.group(1), m.group(2)
    elif (m := NO_ROW_BY.search(message)) is not None:
        step, quoted = m.group(2), m.group(1)
    else:
        return None
    return step, re.sub(r"\\(.)", r"\1", quoted[1:-1])


def _forms(cell: str) -> set[str]:
    """What a cell may be the key of: itself (ignoring case), and the domain of a URL or an
    e-mail address (``https://www.acme.com/about`` → ``acme.com``)."""
    cell = cell.strip().casefold()
    forms = {cell}
    host = _HOST.match(cell)
    if host is not None and "." in host.group(1):
        forms.add(host.group(1).rstrip("."))
    return forms


class ParentFinder:
    """Finds, among the not-ok rows of the steps referred to, the row of each missing key."""

    def __init__(self, tallies: list[StepTally]) -> None:
        self._tallies = tallies
        self._wanted: dict[str, dict[str, list[StepTally]]] = {}
        """step referred to → folded key → the tallies of the steps that missed it."""
        for t in tallies:
            for examples in t.examples.values():
                for ex in examples:
                    ref = missing_ref(ex.error)
                    if ref is not None:
                        step, key = ref
                        by_key = self._wanted.setdefault(step, {})
                        by_key.setdefault(key.casefold(), []).append(t)

    def __bool__(self) -> bool:
        return bool(self._wanted)

    def offer(
        self, step: str, source_file: str, source_row: int, values: dict[str, Any], error: str
    ) -> None:
        """A not-ok row of ``step`` (from failures.csv): is it the row a missing key names?"""
        keys = self._wanted.get(step)
        if not keys:
            return
        forms = set().union(*(_forms(str(v)) for v in values.values() if v not in (None, "")))
        for key in forms & keys.keys():  # a row's cells: a few look-ups, whatever the keys
            for t in keys[key]:
                found = ReasonExample(source_file, source_row, None, None, error)
                t.parents.setdefault((step, key), found)

    def offer_all(self, rows: Iterable[tuple[str, str, int, dict[str, Any], str]]) -> None:
        for step, source_file, source_row, values, error in rows:
            self.offer(step, source_file, source_row, values, error)

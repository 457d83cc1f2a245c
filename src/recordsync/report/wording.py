"""The words report.md and report.html share: how owners were found, and the sentences of
the merges and duplicates sections.

One place gives each sentence in both its forms (report.md's full one, report.html's brief
one), side by side, so that the two cannot drift apart unnoticed; each format adds its own
markup. A ``code`` span is written in backticks (report.md's markup); report.html turns it
into ``<code>`` with :func:`html_text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Any

from recordsync.report.tally import StepTally

OWNER_WORDS = (
    ("by_email", "by e-mail"),
    ("by_name", "by full name"),
    ("by_id", "by user id"),
    ("owners_file", "owners file"),
    ("default", "default owner"),
    ("blank", "blank cell"),
    ("unowned", "left unowned"),
    ("unknown", "unknown"),
    ("ambiguous", "ambiguous"),
    ("offline", "not checked (offline)"),
    ("not_looked_up", "not looked up (unchanged from their digests, malformed lines)"),
)
"""An owner count's key in summary.json -> the words for it."""


@dataclass(frozen=True)
class Sentence:
    """One line of a merges and duplicates section: the step it is about, and what it says
    of that step's rows (``code`` in backticks); ``examples``: rows it stands for."""

    step: str
    text: str
    examples: tuple[str, ...] = ()


def _form(brief: bool, full: str, short: str) -> str:
    return short if brief else full


def held_and_duplicate(summary: dict[str, Any], *, brief: bool) -> list[Sentence]:
    """Per step of summary.json, the rows without a record of their own: held as merged,
    found merged, and duplicates (each row is in failures.csv naming the row it merges with
    or that won)."""
    out: list[Sentence] = []
    for step in summary["steps"]:
        name = step["step"]
        if step.get("rows_merged"):
            text = _form(
                brief,
                "row(s) not sent: the service would fold each into the record of the row "
                "named in `_error` (its dedup rules), overwriting it",
                "row(s) not sent: the service would fold each into the record of the row "
                "named in `_error`",
            )
            out.append(Sentence(name, f"{step['rows_merged']} {text}"))
        if step.get("merged"):
            text = _form(
                brief,
                "row(s) sent and found on a record that another row (or another ledger key) "
                "already holds: not recorded as theirs",
                "row(s) sent and found on a record that another row (or ledger key) already "
                "holds",
            )
            out.append(Sentence(name, f"{step['merged']} {text}"))
        if step.get("rows_duplicate"):
            if step.get("duplicates_expected"):
                how = _form(
                    brief, "declared expected: they do not fail the run", "declared expected"
                )
            else:
                how = _form(
                    brief,
                    "they fail the run unless the mapping declares them expected",
                    "they fail the run",
                )
            out.append(
                Sentence(
                    name,
                    f"{step['rows_duplicate']} duplicate row(s) not sent, each naming the row "
                    f"that has its key ({how})",
                )
            )
    return out


def service_merged(tallies: list[StepTally], *, brief: bool) -> list[Sentence]:
    """Per step, the rows the service merged: sent to create and answered ``updated``, and
    rows that landed on a record id another row of the step also wrote (with examples)."""
    out: list[Sentence] = []
    for t in tallies:
        if t.merged_creates:
            text = _form(
                brief,
                "row(s) sent to create came back `updated` (the service deduplicated them "
                "into an existing record)",
                "row(s) sent to create came back updated (deduplicated by the service)",
            )
            out.append(Sentence(t.step, f"{t.merged_creates} {text}", tuple(t.merged_examples)))
        if t.shared_records:
            text = _form(
                brief,
                "row(s) landed on a record id that another row of this step also wrote",
                "row(s) landed on a record id another row of this step also wrote",
            )
            out.append(Sentence(t.step, f"{t.shared_records} {text}", tuple(t.shared_examples)))
    return out


_CODE = re.compile(r"`([^`]*)`")


def html_text(text: str) -> str:
    """``text`` HTML-escaped, its backticked spans as ``<code>``."""
    return _CODE.sub(r"<code>\1</code>", escape(text, quote=True))

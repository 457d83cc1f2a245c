"""Per-step counts, kept twice: counters bumped by the runner, and counts of the per-row
outcomes bumped by the report writer. The accounting check compares the two.

    read = invalid + duplicate + merged-held + unchanged + to send
    to send = created + updated + merged + failed + in_doubt   (dry run: valid + failed)

A ``merged`` row is either held (predicted to fold into the record another row claims: not
sent, ``rows_merged``) or sent and found on such a record (``merged``).
``rows_read`` and the rows to send (:attr:`StepTally.sent`) come from the runner's counters;
every other number from the outcomes written to ``results.csv``. The rows to send include
those reported ``failed`` with ``not sent: ...`` because the run stopped first
(``not_sent``); ``rows_sent`` is what really went out (a dry run: what would have):

    rows_sent = to send - not_sent
    read = invalid + duplicate + merged-held + unchanged + not_sent + rows_sent

``rows_not_ok`` counts the rows that keep a run from exiting 0 (failed, invalid, in doubt,
merged, and duplicates unless declared expected). A run's totals are the sums of its steps'
counts, every one (:func:`totals`; :func:`totals_errors` checks a summary for it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recordsync.core.model import RowStatus, SourceRow
from recordsync.report.examples import PER_REASON, ReasonExample, make_example

COUNT_COLUMNS = (
    ("read", "rows_read"),
    ("invalid", "rows_invalid"),
    ("duplicate", "rows_duplicate"),
    ("merge held", "rows_merged"),
    ("unchanged", "rows_unchanged"),
    ("not sent", "not_sent"),
    ("sent", "rows_sent"),
    ("created", "created"),
    ("updated", "updated"),
    ("merged", "merged"),
    ("failed", "failed"),
    ("in doubt", "in_doubt"),
)
"""A step's row counts as the reports show them: (column label, summary.json key)."""

COUNT_KEYS = (
    "rows_read",
    "rows_invalid",
    "rows_duplicate",
    "rows_merged",
    "rows_unchanged",
    "rows_sent",
    "created",
    "updated",
    "merged",
    "failed",
    "in_doubt",
    "not_sent",
    "chunks",
    "deleted",
    "delete_failed",
    "rows_not_ok",
)
MAX_REASONS = 2000
OWNER_OUTCOMES = {
    "users:email": "by_email",
    "users:name": "by_name",
    "users:id": "by_id",
    "owners_file": "owners_file",
    "default": "default",
    "blank": "blank",
    "unowned": "unowned",
    "unknown": "unknown",
    "ambiguous": "ambiguous",
    "offline": "offline",
}
"""``PreparedRow.owner_resolution`` → the key it is counted under in a step's ``owners``."""

# Only data goes (cell values, emails, UUIDs, dates, record ids, row and line numbers); the
# rule's own words stay: its limits ("must be <= 100"), option lists, separators, formats, and
# the quoted names of columns, fields, templates, steps, mappings and pipelines.
_NAME = r"(?:column|field|template|step|mapping|pipeline|profile|separator|[a-z]+_format:?)"
_QUOTED = re.compile(rf"""(\b{_NAME} )?(?<!\w)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
_DUP_KEY = re.compile(r"\bduplicate key (\w+):.*?: (?=also on |row )")
_NORMALISE = (
    (re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+"), "<email>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F-]{27}\b"), "<uuid>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?"), "<date>"),
    (re.compile(r"\b(line|row|rows|record|records|result|chunk|found|after) #?\d+\b"), r"\1 N"),
    (re.compile(r"#\d+\b"), "#N"),
    (re.compile(r"(: )[+-]?\d+(?:\.\d+)? (?=is not )"), r"\1N "),
    (re.compile(r" \(sent [^→]*?\)(?= → )"), ""),  # the value sent of a rejected value
)


def _hide_value(m: re.Match[str]) -> str:
    if m.group(1) or m.string.startswith(" record ", m.end()):  # a name: "no 'companies' record"
        return m.group(0)
    return m.group(2)[0] + "…" + m.group(2)[0]


def reason_group(message: str) -> str:
    """A failure message with its data values taken out, for grouping."""
    text = _DUP_KEY.sub(r"duplicate key \1:…: ", message)
    text = _QUOTED.sub(_hide_value, text)
    for pattern, repl in _NORMALISE:
        text = pattern.sub(repl, text)
    return text


def message_value(message: str) -> str | None:
    """The first data value a failure message holds (what :func:`reason_group` takes out):
    the key of a duplicate, else the first quoted value that is not a name."""
    if m := _DUP_KEY.search(message):
        return m.group(0)[len("duplicate key ") : -2]
    for m in _QUOTED.finditer(message):
        if not (m.group(1) or message.startswith(" record ", m.end())):
            return m.group(2)[1:-1]
    return None


@dataclass(slots=True)
class StepTally:
    """Everything the report says about one step."""

    step: str
    mapping: str
    object_type: str
    # counters (the runner's)
    read: int = 0
    sent: int = 0
    """Rows to send: those sent and those reported failed ``not sent`` as the run stopped
    first (``rows_sent`` is ``sent - not_sent``: see :meth:`counts`)."""
    chunks: int = 0
    unreconciled_chunks: int = 0
    settled_by_reading: int = 0
    resent_after_lost_answer: int = 0
    """Rows resent (as is or by name) after a try that may have been applied."""
    aborted: str | None = None
    duplicates_expected: bool = False
    """The mapping declares duplicates expected: they do not count in ``rows_not_ok``."""
    # outcome counts (the report writer's)
    outcomes: Counter[RowStatus] = field(default_factory=Counter)
    merge_held: int = 0
    """``merged`` rows that were not sent (predicted); the others were sent."""
    not_sent: int = 0
    """``failed`` rows that were never sent (``not sent: ...``): the run stopped first."""
    deleted: int = 0
    """Records soft-deleted by mirror deletes (not source rows: outside the accounting)."""
    delete_failed: int = 0
    mirror_skipped: str | None = None
    """Why the step's mirror deletes were skipped (a malformed line may hide rows), or None."""
    source_changed: str | None = None
    """A resumed step whose source changed since the interrupted attempt (how), or None."""
    window: str | None = None
    """An incremental pass: the rows it read (``rows_read`` counts them, not the source's
    rows), or None for a step that read its whole source."""
    rejected: int = 0
    """Failed rows whose value the service rejected (a retry fails the same way)."""
    reasons: Counter[str] = field(default_factory=Counter)
    merged_creates: int = 0
    merged_examples: list[str] = field(default_factory=list)
    shared_records: int = 0
    shared_examples: list[str] = field(default_factory=list)
    suggestions: dict[str, Counter[str]] = field(default_factory=dict)
    value_maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per field: ``column`` (the one its messages name, or None) and ``value_map`` {source
    value: option} of the suggestions, for a snippet to paste (report.html)."""
    examples: dict[str, list[ReasonExample]] = field(default_factory=dict)
    """Per reason group: its first :data:`~recordsync.report.examples.PER_REASON` rows."""
    reason_status: dict[str, RowStatus] = field(default_factory=dict)
    """Per reason group: the status of its rows (invalid, failed, duplicate, ...)."""
    parents: dict[tuple[str, str], ReasonExample] = field(default_factory=dict)
    """(step, key) of a reference this step's rows did not find → the row of that step with
    the key that was not ok (found at the end of the run: :mod:`recordsync.report.parents`)."""
    owners: Counter[str] = field(default_factory=Counter)
    """Rows by how their owner was found (``OWNER_OUTCOMES`` values)."""
    refs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per ``ref`` field: step, by, on_missing and the counts set, no_value, not_found,
    ambiguous, from_service (:meth:`recordsync.nightly.ledger_prep.StepPrep.ref_counts`)."""

    def add_owner(self, resolution: str | None) -> None:
        if resolution is not None:
            self.owners[OWNER_OUTCOMES.get(resolution, resolution)] += 1

    def owner_counts(self) -> dict[str, int]:
        """Rows by how their owner was found, and ``not_looked_up``: the rows read whose
        owner was not looked up in this run (no owner column; rows found unchanged from their
        digests, never mapped; malformed lines). The counts add up to ``rows_read``."""
        counts = {key: self.owners[key] for key in OWNER_OUTCOMES.values()}
        counts["not_looked_up"] = max(0, self.read - sum(counts.values()))
        return counts

    def add_reason(
        self,
        message: str,
        source: SourceRow | None = None,
        *,
        status: RowStatus | None = None,
        key: str | None = None,
    ) -> None:
        """Count ``message`` under its group; keep ``source`` as one of its examples (with
        the row's match ``key``); the group's rows' ``status`` (the first one seen)."""
        group = reason_group(message)
        if not (group in self.reasons or len(self.reasons) < MAX_REASONS):
            group = "(other reasons)"
        self.reasons[group] += 1
        if status is not None:
            self.reason_status.setdefault(group, status)
        if source is not None:
            kept = self.examples.setdefault(group, [])
            if len(kept) < PER_REASON:
                data = message_value(message)
                kept.append(
                    make_example(
                        source.source_file, source.source_row, source.values, message, data, key
                    )
                )

    def sent_outcomes(self, dry_run: bool) -> int:
        if dry_run:  # failed: only rows not sent (not validated) as the run stopped early
            return self.outcomes[RowStatus.VALID] + self.outcomes[RowStatus.FAILED]
        sent = (RowStatus.CREATED, RowStatus.UPDATED, RowStatus.FAILED, RowStatus.IN_DOUBT)
        merged = self.outcomes[RowStatus.MERGED] - self.merge_held  # sent, then found merged
        return sum(self.outcomes[s] for s in sent) + merged

    def not_ok(self) -> int:
        """Rows that keep the run from exiting 0."""
        o = self.outcomes
        bad = (RowStatus.FAILED, RowStatus.IN_DOUBT, RowStatus.INVALID, RowStatus.MERGED)
        n = sum(o[s] for s in bad)
        return n if self.duplicates_expected else n + o[RowStatus.DUPLICATE]

    def counts(self) -> dict[str, int]:
        o = self.outcomes
        return {
            "rows_read": self.read,
            "rows_invalid": o[RowStatus.INVALID],
            "rows_duplicate": o[RowStatus.DUPLICATE],
            "rows_merged": self.merge_held,
            "rows_unchanged": o[RowStatus.UNCHANGED],
            "rows_sent": self.sent - self.not_sent,  # what went out, not what was to go
            "created": o[RowStatus.CREATED],
            "updated": o[RowStatus.UPDATED],
            "merged": o[RowStatus.MERGED] - self.merge_held,
            "failed": o[RowStatus.FAILED],
            "in_doubt": o[RowStatus.IN_DOUBT],
            "not_sent": self.not_sent,
            "chunks": self.chunks,
            "deleted": self.deleted,
            "delete_failed": self.delete_failed,
            "rows_not_ok": self.not_ok(),
        }

    def accounting_errors(self, dry_run: bool) -> list[str]:
        o = self.outcomes
        errors: list[str] = []
        settled = (
            o[RowStatus.INVALID]
            + o[RowStatus.DUPLICATE]
            + self.merge_held
            + o[RowStatus.UNCHANGED]
            + self.sent_outcomes(dry_run)
        )
        if settled != self.read or sum(o.values()) != self.read:
            errors.append(
                f"step {self.step}: {self.read} rows read but {sum(o.values())} outcomes "
                f"written ({settled} invalid + duplicate + merged (held) + unchanged + sent)"
            )
        if self.sent_outcomes(dry_run) != self.sent:
            what = "valid" if dry_run else "created + updated + merged + failed + in_doubt"
            errors.append(
                f"step {self.step}: {self.sent} rows sent but {self.sent_outcomes(dry_run)} {what}"
            )
        return errors

    def as_json(self, dry_run: bool) -> dict[str, Any]:
        return {
            "step": self.step,
            "mapping": self.mapping,
            "object_type": self.object_type,
            **self.counts(),
            "unreconciled_chunks": self.unreconciled_chunks,
            "settled_by_reading": self.settled_by_reading,
            "resent_after_lost_answer": self.resent_after_lost_answer,
            "rejected_values": self.rejected,
            "aborted": self.aborted,
            "owners": self.owner_counts(),
            "mirror_deletes_skipped": self.mirror_skipped,
            "source_changed_since_interrupted_attempt": self.source_changed,
            "duplicates_expected": self.duplicates_expected,
            "accounting_ok": not self.accounting_errors(dry_run),
            **({"references": self.refs} if self.refs else {}),
            **({"incremental_window": self.window} if self.window else {}),
        }


def totals(tallies: list[StepTally]) -> dict[str, int]:
    """The run's totals: for every count of :meth:`StepTally.counts`, the sum over the steps
    (the one place they are computed)."""
    out = dict.fromkeys(COUNT_KEYS, 0)
    for t in tallies:
        for key, value in t.counts().items():
            out[key] += value
    return out


def totals_errors(summary: Mapping[str, Any]) -> list[str]:
    """Where summary.json's ``totals`` differ from the sums of its ``steps`` (every key of
    :data:`COUNT_KEYS`, each missing one counted as 0), one message per count; [] when the
    totals row of report.md and report.html is the sum of the rows above it."""
    steps = summary.get("steps") or []
    total = summary.get("totals") or {}
    errors: list[str] = []
    for key in COUNT_KEYS:
        summed = sum(int(step.get(key) or 0) for step in steps)
        if int(total.get(key) or 0) != summed:
            errors.append(
                f"totals: {key} is {int(total.get(key) or 0)} but the steps add up to {summed}"
            )
    return errors

"""Change detection: which prepared rows need sending, which are ``unchanged``.

A :class:`ChangeDetector` works on a chunk of prepared rows at a time (one bulk ledger
lookup per chunk, never a query per row). For each VALID row with a key:

    no ledger entry                          → send (reason ``new``)
    last send failed, or was in doubt        → send (``retry``)
    record was mirror-deleted                → send (``reappeared``)
    input hash differs from the ledger's     → send (``changed``)
    full_refresh=True                        → send (``full_refresh``)
    otherwise                                → unchanged (not sent)

VALID rows without a key cannot be tracked and are always sent (``untracked``). Rows that
are not VALID (invalid, duplicate) are passed back untouched in ``skipped``: they were never
going to be sent and keep their own status. On resume, a VALID row whose key and input hash
(its content) this run already journaled with a final outcome (``journaled``,
:meth:`Journal.journaled_rows`) comes back in ``done``, with that outcome: it is not sent
again. Rows are found by content, never by line number, so a source re-exported in another
order or changed after the kill has every other row decided again.

``full_refresh`` ignores the hashes but keeps the ledger: with ``match_by_ledger_id`` rows are
still matched by record id, so a full refresh never creates second records. Dropping the
ledger itself is ``recordsync state reset`` (:meth:`StateStore.forget`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import NamedTuple

from recordsync.core.model import BatchInput, PreparedRow, RowStatus
from recordsync.state.hashing import encode_input, encode_inputs
from recordsync.state.journal_content import JournaledRows
from recordsync.state.journal_records import Outcome
from recordsync.state.store import ACKED_FAILED, DELETED, Entry, StateStore

_REASON = attrgetter("reason.value")
_key, _value = attrgetter("key"), attrgetter("value")
_first, _second = itemgetter(0), itemgetter(1)


class SendReason(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    RETRY = "retry"
    REAPPEARED = "reappeared"
    FULL_REFRESH = "full_refresh"
    UNTRACKED = "untracked"


class ToSend(NamedTuple):
    """A row to send: ``payload`` is what goes into the batch (ledger-matched when enabled);
    ``input_hash`` goes to the journal and, once acknowledged, to the ledger. A tuple: a
    chunk's are made in C (:meth:`ChangeDetector.classify`)."""

    row: PreparedRow
    payload: BatchInput
    input_hash: str
    reason: SendReason
    entry: Entry | None
    encoded: bytes | None = None
    """``payload`` as JSON, when :func:`encode_input` could make it (else None)."""

    @property
    def was_in_doubt(self) -> bool:
        """The last send of this key was in doubt: apply the in-doubt rules (resend only if
        resending cannot create a second record; otherwise hold it)."""
        return self.entry is not None and self.entry.last_status == "in_doubt"


@dataclass(slots=True)
class Unchanged:
    row: PreparedRow
    entry: Entry


@dataclass(slots=True)
class Classification:
    to_send: list[ToSend] = field(default_factory=list)
    unchanged: list[Unchanged] = field(default_factory=list)
    skipped: list[PreparedRow] = field(default_factory=list)
    """Rows that are not VALID (invalid, duplicate): reported with their own status."""
    done: list[PreparedRow] = field(default_factory=list)
    """Resume only: rows whose key and content this run already journaled; report them with
    ``outcomes`` (one for each), never send them again."""
    outcomes: list[Outcome] = field(default_factory=list)


def ledger_match(payload: BatchInput, entry: Entry | None) -> BatchInput:
    """``payload`` set to ``match_by: id`` with the ledger's record id, when the ledger knows a
    live record for this key; otherwise ``payload`` itself. The input is not modified."""
    if entry is None or entry.record_id is None or entry.last_status == DELETED:
        return payload
    matched = dict(payload)
    matched["match_by"] = "id"
    matched["match_value"] = entry.record_id
    return matched


class ChangeDetector:
    """Classifies prepared rows of one mapping against the ledger."""

    def __init__(
        self,
        store: StateStore,
        pipeline: str,
        mapping: str,
        *,
        full_refresh: bool = False,
        match_by_ledger_id: bool = False,
        journaled: JournaledRows | None = None,
    ) -> None:
        self.store = store
        self.pipeline = pipeline
        self.mapping = mapping
        self.full_refresh = full_refresh
        self.match_by_ledger_id = match_by_ledger_id
        self.journaled = journaled
        self.counts: Counter[str] = Counter()
        """Running totals over every :meth:`classify` call: send reasons, ``unchanged``,
        ``skipped``."""
        self.ledger_was_empty = not store.has_entries(pipeline, mapping)
        """The mapping's ledger held nothing when this detector was made (a first run): it is
        not looked up. What the run writes to it meanwhile (acknowledged rows, folded as the
        step goes) is of keys classified already: a step sends a key once."""

    def classify(self, rows: Iterable[PreparedRow]) -> Classification:
        """Split one chunk of prepared rows (any size; 100–5000 is a good chunk)."""
        result = Classification()
        rows = rows if isinstance(rows, list) else list(rows)
        ok = RowStatus.VALID
        valid = [r for r in rows if r.status is ok and r.payload is not None]
        if len(valid) < len(rows):
            result.skipped = [r for r in rows if r.status is not ok or r.payload is None]
        payloads: list[BatchInput] = [p for r in valid if (p := r.payload) is not None]
        keys = [] if self.ledger_was_empty else [r.key for r in valid if r.key is not None]
        ledger = self.store.lookup_many(self.pipeline, self.mapping, keys) if keys else {}
        journaled = self.journaled
        encoded_all = encode_inputs(payloads)
        if journaled is None and not ledger:  # no entry for any row: the reasons at once
            keyed = SendReason.FULL_REFRESH if self.full_refresh else SendReason.NEW
            untracked = SendReason.UNTRACKED
            row_keys = list(map(_key, valid))
            reasons: Iterable[SendReason] = repeat(keyed)
            if None in row_keys:
                reasons = [keyed if k is not None else untracked for k in row_keys]
            result.to_send = list(
                map(
                    tuple.__new__,
                    repeat(ToSend),
                    zip(
                        valid,
                        payloads,
                        map(_first, encoded_all),
                        reasons,
                        repeat(None),
                        map(_second, encoded_all),
                    ),
                )
            )
            if type(reasons) is list:  # counted in the order of the rows, as below
                self.counts.update(map(_value, reasons))
            elif valid:
                self.counts[keyed.value] += len(valid)
        else:
            for row, (digest, encoded) in zip(valid, encoded_all, strict=True):
                assert row.payload is not None
                if journaled is not None:
                    o = journaled.take(row.key, digest, row.source.source_row)
                    if o is not None:
                        result.done.append(row)
                        result.outcomes.append(o)
                        continue
                entry = ledger.get(row.key) if row.key is not None else None
                reason = self._reason(row, entry, digest)
                if reason is None:
                    assert entry is not None
                    result.unchanged.append(Unchanged(row, entry))
                    continue
                payload = row.payload
                if self.match_by_ledger_id:
                    payload = ledger_match(payload, entry)
                    if payload is not row.payload:  # the same hash: match keys are not hashed
                        encoded = encode_input(payload)[1]
                result.to_send.append(ToSend(row, payload, digest, reason, entry, encoded))
            self.counts.update(map(_REASON, result.to_send))
        self.counts["unchanged"] += len(result.unchanged)
        self.counts["skipped"] += len(result.skipped)
        if result.done:
            self.counts["done"] += len(result.done)
        return result

    def _reason(self, row: PreparedRow, entry: Entry | None, digest: str) -> SendReason | None:
        if row.key is None:
            return SendReason.UNTRACKED
        if self.full_refresh:
            return SendReason.FULL_REFRESH
        if entry is None:
            return SendReason.NEW
        if entry.last_status in ACKED_FAILED:
            return SendReason.RETRY
        if entry.last_status == DELETED:
            return SendReason.REAPPEARED
        if entry.input_hash != digest:
            return SendReason.CHANGED
        return None

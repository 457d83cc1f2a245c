"""Merges found after the fact: a sent row whose answer names a record that another row of
the step (or another key of the identity ledger) already holds did not get a record of its
own: the service folded it into that one (its dedup on create) and overwrote it.

Such a row is reported ``merged`` with the row or key that holds the record, and journaled
as failed, so that the ledger never records its key as owning that record (later runs would
otherwise call both rows ``unchanged``). With ``merges: expected`` the row stays ``updated``
(the report notes it among the rows the service merged).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import PreparedRow, RowStatus
from recordsync.tuning.spill import SpillMap

OtherOwners = Callable[[list[tuple[str | None, int]]], dict[int, list[str]]]
"""``(key, record id)`` pairs → for each record id that a ledger key other than the pair's
key holds, the keys holding it (:meth:`recordsync.nightly.hook.StateHook.other_owners`)."""

_LANDED = (RowStatus.CREATED, RowStatus.UPDATED)
_status, _record_id = attrgetter("status"), attrgetter("record_id")
_source_row, _key = attrgetter("source.source_row"), attrgetter("key")


class RecordClaims:
    """The record ids the rows of one step landed on, in the order the answers came."""

    def __init__(
        self,
        *,
        expected: bool,
        other_owners: OtherOwners | None = None,
        block: int | None = None,
    ) -> None:
        self.expected = expected
        self.other_owners = other_owners
        self._rows = SpillMap(block)
        """record id → (source row, key) of the first row of the step that landed on it
        (on disk past ``block`` records: :mod:`recordsync.tuning.spill`)."""

    def close(self) -> None:
        self._rows.close()

    def settle(self, rows: list[PreparedRow], results: list[EntryResult]) -> list[EntryResult]:
        """``results`` with each row that landed on a record another row holds as merged."""
        if len(rows) != len(results):  # a short answer: the sender reports it, unchanged here
            return results
        statuses, rids = set(map(_status, results)), list(map(_record_id, results))
        updated = (
            [
                (r.key, res.record_id)
                for r, res in zip(rows, results, strict=True)
                if res.status is RowStatus.UPDATED and res.record_id is not None
            ]
            if RowStatus.UPDATED in statuses
            else []
        )
        ledger: dict[int, list[str]] = {}
        if updated and self.other_owners is not None:
            ledger = self.other_owners(updated)
        plain = statuses.issubset(_LANDED) and None not in rids
        known = self._rows.get_many(
            rids
            if plain
            else (r.record_id for r in results if r.status in _LANDED and r.record_id is not None)
        )
        if plain and not known and not ledger and len(set(rids)) == len(rids):
            # each row landed on a record no other row holds (the common chunk): column-wise
            self._rows.put_many(rids, zip(map(_source_row, rows), map(_key, rows), strict=True))
            return list(results)
        out: list[EntryResult] = []
        for row, res in zip(rows, results, strict=True):
            rid = res.record_id
            if res.status not in _LANDED or rid is None:
                out.append(res)
                continue
            first = known.get(rid)
            if first is not None and (
                first[0] == row.source.source_row or (first[1] is not None and first[1] == row.key)
            ):
                first = None  # the same row or key again (a resend): its own record
            holders = ledger.get(rid, []) if res.status is RowStatus.UPDATED else []
            holder = next((k for k in holders if k != row.key), None)
            if (first is None and holder is None) or self.expected:
                if rid not in known:
                    known[rid] = (row.source.source_row, row.key)
                    self._rows.put_new(rid, known[rid])
                out.append(res)
                continue
            if first is not None:
                who, fix = f"row {first[0]}", "Make the rows differ"
            else:
                who = f"ledger key {holder!r}"
                fix = (
                    "If that key's row was renamed or left the source, declare a stable "
                    "`ledger_key` (e.g. the export's id); otherwise make the rows differ"
                )
            out.append(
                EntryResult(
                    RowStatus.MERGED,
                    rid,
                    f"merged: the service put it on record {rid}, which {who} already holds "
                    f"(its dedup on create); that record now holds this row's values. {fix}, "
                    "or declare `merges: expected` in the mapping",
                )
            )
        return out

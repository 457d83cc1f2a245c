"""Settle the entries of a batch whose answer was lost, by reading the service back.

After a timeout, a dropped connection, a 5xx or an HTML error page *after* the request was
written, the batch may or may not have been applied. An entry that is safe to resend as is
(:func:`recordsync.core.safety.resend_as_is_safe`) simply goes again. Any other entry (a
create with no key the service deduplicates by, a ``match_by: name`` that renames) is settled
by reading, with only the reads of the seed and the contract: the list endpoint,
``filter[name]=<name>`` (a case-insensitive substring match: names are compared exactly
here), newest writes first (``sort_by=updated_at``, ``sort_order=desc``).

    records named like the entry, stamped at or     decision
    after the chunk's mark, not known to be
    another row's (nor seen at the mark)
    none                                            ``absent``: not applied, resend as is
    exactly one holding the entry's values, and     ``applied``: that record is the row's
    no other entry of the chunk has those values
    anything else                                   ``unknown``: held in doubt, with why

"Holding the entry's values": every field the entry sets reads back equal (strings also
case-insensitively, numbers as numbers, datetimes as instants), so a record someone else
wrote under that name is not taken for the row's.

"The chunk's mark" (:class:`recordsync.send.readback.Mark`) is a time on the clock that
stamps the service's records, never the client's clock nor an answer's ``Date`` header: the
``created_at`` of a record the step's last answered chunk created (read by id, only once an
answer is lost), else the newest ``updated_at`` of the type read before the step's first
chunk that may create. Whatever the chunk wrote is stamped at or after it, whatever the
skew between the clocks. Without a mark (the read failed) every record of that name counts,
so only ``absent`` can be decided. A target whose list endpoint answers 404 or 405, or a read
that fails, leaves the entry ``unknown`` with that reason.

Rows an *earlier* run may have applied are read back since that run's start, which only the
client's clock knows: the mark is that start less :data:`EARLIER_RUN_MARGIN_S`, so stamps up
to that far behind the client's clock are still counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from recordsync.core.chunk_report import EntryResult
from recordsync.core.model import BatchInput, RowStatus
from recordsync.reconcile.holds import holds as holds
from recordsync.send.client import RecordServiceClient
from recordsync.send.readback import Mark, NameReader, Unreadable, record_id, when

EARLIER_RUN_MARGIN_S = 3600.0
"""How far behind the client's clock the service may stamp records for a row an earlier run
left in doubt to still be read back (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What reading back found for one entry."""

    kind: Literal["applied", "absent", "unknown"]
    result: EntryResult | None = None
    why: str = ""


class Settler:
    """Reads back the entries of one step's chunks (one instance per sender)."""

    def __init__(self, client: RecordServiceClient, object_type: str) -> None:
        self.reader = NameReader(client, object_type)

    def settle(
        self,
        entries: list[BatchInput],
        todo: list[int],
        mark: Mark | None,
        claimed: set[int],
    ) -> dict[int, Decision]:
        """Decide each entry ``todo`` (indexes into the whole chunk ``entries``), sent after
        ``mark`` (None: not known). ``claimed``: record ids that belong to other entries of
        the chunk; an ``applied`` decision adds its record."""
        out: dict[int, Decision] = {}
        for i in todo:
            name = entries[i].get("name")
            if not isinstance(name, str) or not name:
                out[i] = Decision("unknown", why="the entry has no name to look it up by")
                continue
            old = _renamed_from(entries[i])
            try:
                found = self.reader.written_since(name, mark)
                if old is not None:
                    out[i] = self._rename(entries[i], old, found, mark, claimed)
                    continue
            except Unreadable as exc:
                out[i] = Decision("unknown", why=f"it could not be read back: {exc}")
                continue
            before = mark.known if mark is not None else frozenset()
            found = [r for r in found if record_id(r) not in claimed and record_id(r) not in before]
            mine = [r for r in found if holds(r, entries[i])]
            twins = [e for e in entries if e.get("name") == name]  # this entry included
            if not found:
                out[i] = Decision("absent")
            elif (
                mark is not None
                and len(mine) == 1
                and sum(holds(mine[0], e) for e in twins) == 1
            ):
                rid = record_id(mine[0])
                assert rid is not None
                claimed.add(rid)
                out[i] = Decision("applied", EntryResult(_status(_created(mine[0], mark)), rid))
            else:
                if mark is None:
                    which = "the service's newest record could not be read before the chunk was"
                    which += " sent, to tell which were written since"
                elif not mine:
                    which = "none holds this row's values"
                elif len(mine) > 1:
                    which = f"{len(mine)} hold this row's values"
                else:
                    which = "another entry of this chunk has the same name and values"
                out[i] = Decision(
                    "unknown",
                    why=f"{len(found)} record(s) named {name!r} were written since the chunk"
                    f" was sent and none is known to be another row's ({which})",
                )
        return out

    def _rename(
        self,
        entry: BatchInput,
        old: str,
        found: list[dict[str, Any]],
        mark: Mark | None,
        claimed: set[int],
    ) -> Decision:
        """A ``match_by: name`` entry that renames ``old``: the record it wrote may be one this
        run knows (so ``claimed`` does not rule records out). Absent when no record of the new
        name was written since; applied when exactly one with the entry's values was and none
        named ``old`` is left."""
        if not found:  # no record of the new name was written since: it was not applied
            return Decision("absent")
        ours = [r for r in found if holds(r, entry)]
        left = self.reader.written_since(old, None)
        if len(ours) == 1 and not left and mark is not None:
            record = ours[0]
            rid = record_id(record)
            assert rid is not None
            # a record known before is one it renamed
            created = rid not in claimed and _created(record, mark)
            claimed.add(rid)
            return Decision("applied", EntryResult(_status(created), rid))
        return Decision(
            "unknown",
            why=f"{len(ours)} record(s) named {entry.get('name')!r} with its values were written"
            f" since the chunk was sent and {len(left)} named {old!r} are left",
        )


def lost_answer_doubt(problem: str, decision: Decision) -> EntryResult:
    """The outcome of an entry a lost answer may have applied and reading could not settle."""
    return EntryResult(
        RowStatus.IN_DOUBT,
        None,
        f"in doubt: {problem}; the batch may have been applied and this entry cannot be"
        f" resent without risking a duplicate or another row's record: {decision.why};"
        " check the target, then retry or drop it",
    )


def earlier_send_doubt(decision: Decision) -> EntryResult:
    """The outcome of a row an earlier run's send may have applied, still not settled."""
    return EntryResult(
        RowStatus.IN_DOUBT,
        None,
        "held in doubt: an earlier send of this row may have been applied and it cannot be"
        f" resent without risking a duplicate: {decision.why}; check the target, then"
        " `recordsync retry --resend-in-doubt` the report",
    )


def earlier_run_mark(since: float) -> Mark:
    """The mark to read back a row an earlier run, started at ``since`` (the client's clock),
    may have applied (see the module docstring)."""
    return Mark(since - EARLIER_RUN_MARGIN_S)


def _created(record: dict[str, Any], mark: Mark) -> bool:
    """Whether ``record`` was created after ``mark`` (not one written before it)."""
    at = when(record.get("created_at"))
    return record_id(record) not in mark.known and at is not None and at >= mark.at


def _status(created: bool) -> RowStatus:
    return RowStatus.CREATED if created else RowStatus.UPDATED


def _renamed_from(entry: BatchInput) -> str | None:
    """The name a ``match_by: name`` entry looks for when that is not its own name."""
    value = entry.get("match_value")
    if entry.get("match_by") == "name" and isinstance(value, str) and value != entry.get("name"):
        return value
    return None

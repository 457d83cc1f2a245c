"""Settle the entries of a batch whose answer was lost, by reading the service back.

After a timeout, a dropped connection, a 5xx or an HTML error page *after* the request was
written, the batch may or may not have been applied. An entry that is safe to resend as is
(:func:`recordsync.send.safety.resend_as_is_safe`) simply goes again. Any other entry (a
create with no key the service deduplicates by, a ``match_by: name`` that renames) is settled
by reading, with only the reads of the seed and the contract: the list endpoint,
``filter[name]=<name>`` (a case-insensitive substring match: names are compared exactly
here), newest writes first (``sort_by=updated_at``, ``sort_order=desc``).

    records named like the entry, written since     decision
    the chunk's first try, not known to be
    another row's
    none                                            ``absent``: not applied, resend as is
    exactly one holding the entry's values, and     ``applied``: that record is the row's
    no other entry of the chunk has those values
    anything else                                   ``unknown``: held in doubt, with why

"Holding the entry's values": every field the entry sets reads back equal (strings also
case-insensitively, numbers as numbers, datetimes as instants), so a record someone else
wrote under that name is not taken for the row's.

"Written since" compares each record's ``updated_at`` with the time the chunk was first sent,
moved to the service's clock with the ``Date`` header of the read's answer (whole seconds,
taken when the answer is in: the estimate is never later than the true time, so it errs on
the safe side, where more records count). Without a ``Date`` header every
record of that name counts, so only ``absent`` can be decided. A target whose list endpoint
answers 404 or 405, or a read that fails, leaves the entry ``unknown`` with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from recordsync.model import BatchInput, RowStatus
from recordsync.reconcile.batch import EntryResult
from recordsync.send.client import RecordServiceClient
from recordsync.send.readback import NameReader, Unreadable, record_id, when


@dataclass(frozen=True, slots=True)
class Decision:
    """What reading back found for one entry."""

    kind: Literal["applied", "absent", "unknown"]
    result: EntryResult | None = None
    why: str = ""


class Settler:
    """Reads back the entries of one step's chunks (one instance per sender)."""

    def __init__(
        self,
        client: RecordServiceClient,
        object_type: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.reader = NameReader(client, object_type, clock)

    def settle(
        self,
        entries: list[BatchInput],
        todo: list[int],
        since: float,
        claimed: set[int],
    ) -> dict[int, Decision]:
        """Decide each entry ``todo`` (indexes into the whole chunk ``entries``), first sent
        at local time ``since``. ``claimed``: record ids that belong to other entries of the
        chunk; an ``applied`` decision adds its record."""
        out: dict[int, Decision] = {}
        for i in todo:
            name = entries[i].get("name")
            if not isinstance(name, str) or not name:
                out[i] = Decision("unknown", why="the entry has no name to look it up by")
                continue
            old = _renamed_from(entries[i])
            try:
                found, server_since = self.reader.written_since(name, since)
                if old is not None:
                    out[i] = self._rename(entries[i], old, found, server_since, claimed)
                    continue
            except Unreadable as exc:
                out[i] = Decision("unknown", why=f"it could not be read back: {exc}")
                continue
            found = [r for r in found if record_id(r) not in claimed]
            mine = [r for r in found if holds(r, entries[i])]
            twins = [e for e in entries if e.get("name") == name]  # this entry included
            if not found:
                out[i] = Decision("absent")
            elif (
                server_since is not None
                and len(mine) == 1
                and sum(holds(mine[0], e) for e in twins) == 1
            ):
                rid = record_id(mine[0])
                assert rid is not None
                claimed.add(rid)
                created = (when(mine[0].get("created_at")) or 0.0) >= server_since
                out[i] = Decision("applied", EntryResult(_status(created), rid))
            else:
                if server_since is None:
                    which = "the service's answers carry no Date header to tell when they were"
                    which += " written"
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
        server_since: float | None,
        claimed: set[int],
    ) -> Decision:
        """A ``match_by: name`` entry that renames ``old``: the record it wrote may be one this
        run knows (so ``claimed`` does not rule records out). Absent when no record of the new
        name was written since; applied when exactly one with the entry's values was and none
        named ``old`` is left."""
        if not found:  # no record of the new name was written since: it was not applied
            return Decision("absent")
        ours = [r for r in found if holds(r, entry)]
        left, _ = self.reader.written_since(old, None)
        if len(ours) == 1 and not left and server_since is not None:
            record = ours[0]
            rid = record_id(record)
            assert rid is not None
            created = rid not in claimed  # a record known before is one it renamed
            created = created and (when(record.get("created_at")) or 0.0) >= server_since
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


def _status(created: bool) -> RowStatus:
    return RowStatus.CREATED if created else RowStatus.UPDATED


def _renamed_from(entry: BatchInput) -> str | None:
    """The name a ``match_by: name`` entry looks for when that is not its own name."""
    value = entry.get("match_value")
    if entry.get("match_by") == "name" and isinstance(value, str) and value != entry.get("name"):
        return value
    return None


def holds(record: dict[str, Any], entry: BatchInput) -> bool:
    """True when ``record`` reads back with every value ``entry`` writes."""
    fields = entry.get("fields")
    wanted = dict(fields) if isinstance(fields, dict) else {}
    for key in ("name", "profile_image_url"):
        if key in entry:
            wanted[key] = entry[key]
    return all(_same(value, record.get(key)) for key, value in wanted.items())


def _same(sent: Any, stored: Any) -> bool:
    if sent == stored and type(sent) is type(stored):
        return True
    if isinstance(sent, bool) or isinstance(stored, bool):
        return False
    if isinstance(sent, int | float) and isinstance(stored, int | float):
        return float(sent) == float(stored)
    if isinstance(sent, str) and isinstance(stored, str):
        if sent.strip().casefold() == stored.strip().casefold():
            return True
        a, b = when(sent), when(stored)
        return a is not None and a == b
    if isinstance(sent, list) and isinstance(stored, list):
        return len(sent) == len(stored) and all(map(_same, sent, stored))
    return False

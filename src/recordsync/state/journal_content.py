"""Resume by content: the rows a dead attempt acknowledged, found by key and input hash.

A resumed run reads the source again, possibly re-exported in another order or changed
after the kill. A row gets its journaled outcome (and is not sent again) only if a row with
the same key and the same content (the input hash the journal holds) was acknowledged; every
other row is decided again: the ledger already holds what the dead attempt acknowledged, so
a row is sent if it differs from that. Line numbers are not trusted.

:class:`JournaledRows` holds a step's final outcomes compactly: a 16-byte BLAKE2b digest of
key and hash in a dict, the rest in arrays, error texts (failed and held rows) in a dict. For
100,000 rows that is 15.5 MB (tracemalloc), against 55 MB as a dict of outcome tuples.
"""

from __future__ import annotations

import hashlib
from array import array

from recordsync.state.journal_records import Outcome

_STATUSES = ("created", "updated", "failed", "in_doubt")
_CODE = {s: i for i, s in enumerate(_STATUSES)}


def _digest(key: str | None, input_hash: str | None) -> bytes:
    text = "\x00" if key is None else "\x01" + key
    data = f"{text}\x00{input_hash or ''}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


class JournaledRows:
    """The final outcomes a step's rows got in this run, by the row's key and input hash.

    ``moved`` counts rows found on another line than the journal's, and :meth:`left` the
    journaled outcomes no row of the source took (yet): either means the source changed."""

    def __init__(self, step: str) -> None:
        self.step = step
        self._first: dict[bytes, int] = {}
        self._more: dict[bytes, list[int]] = {}
        """Further rows with the same key and content (identical rows without a key)."""
        self._rows = array("q")
        self._chunks = array("q")
        self._ids = array("q")
        self._status = bytearray()
        self._errors: dict[int, str] = {}
        self._left = 0
        self.moved = 0

    def add(
        self,
        chunk_no: int,
        source_row: int,
        key: str | None,
        input_hash: str | None,
        status: str,
        record_id: int | None,
        error: str | None,
    ) -> None:
        i = len(self._rows)
        self._rows.append(source_row)
        self._chunks.append(chunk_no)
        self._ids.append(-1 if record_id is None else record_id)
        self._status.append(_CODE[status])
        if error is not None:
            self._errors[i] = error
        d = _digest(key, input_hash)
        if d in self._first:
            self._more.setdefault(d, []).append(i)
        else:
            self._first[d] = i
        self._left += 1

    def take(self, key: str | None, input_hash: str, source_row: int) -> Outcome | None:
        """The journaled outcome of a row with this key and input hash, or None. Each
        outcome goes to one source row (the one on the same line, if any; else the first)."""
        d = _digest(key, input_hash)
        i = self._first.get(d)
        if i is None:
            return None
        more = self._more.get(d)
        if more:
            pool = [i, *more]
            i = next((j for j in pool if self._rows[j] == source_row), min(pool))
            pool.remove(i)
            self._first[d] = pool[0]
            if len(pool) > 1:
                self._more[d] = pool[1:]
            else:
                del self._more[d]
        else:
            del self._first[d]
        self._left -= 1
        if self._rows[i] != source_row:
            self.moved += 1
        rid = self._ids[i]
        return Outcome(
            self.step,
            self._chunks[i],
            self._rows[i],
            key,  # the journaled key: the same
            _STATUSES[self._status[i]],
            None if rid < 0 else rid,
            self._errors.get(i),
        )

    def left(self) -> int:
        """Journaled outcomes no row took (yet)."""
        return self._left

"""Per-row facts a run must remember until its step ends, kept off the heap past a block.

:class:`KeySpool` is an append-only list of strings (the keys a step has seen, for mirror
deletes), written to a temporary file a block at a time.

:class:`SpillMap` maps an integer (a record id) to ``(int, str | None)`` (the first source row
that landed on it, and that row's key). The first :data:`BLOCK` entries live in a dict; then
they are appended, a block at a time, to a temporary file (keys and rows as 64-bit integers,
the strings as JSON: about 10 ms a block of 50,000), so memory does not grow with the source.
The keys written so far span ``[lo, hi]``: a key outside that range (a record the service
just created, whose id is above every earlier one) is answered without reading the disk.
The first key asked inside it moves the blocks written so far into a private temporary
SQLite database (deleted when the map is closed), which answers and takes the later blocks
from then on; a first run, whose records are all new, never builds it.
"""

from __future__ import annotations

import sqlite3
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import IO

import orjson

BLOCK = 50_000
"""Entries kept in memory before they are written to the temporary file."""

CACHE_KIB = 2048
"""The temporary database's page cache (SQLite's ``cache_size``, in KiB)."""

Value = tuple[int, str | None]
_a, _b = itemgetter(0), itemgetter(1)


class SpillMap:
    """int → ``(int, str | None)``; the first value set for a key is kept."""

    def __init__(self, block: int | None = None) -> None:
        self.block = block or BLOCK
        self._mem: dict[int, Value] = {}
        self._db: sqlite3.Connection | None = None
        self._file: IO[bytes] | None = None
        self._blocks: list[tuple[int, int, int]] = []
        """(offset, entries, bytes of strings) of the blocks in the file, not yet moved into
        the database."""
        self._lo = self._hi = 0
        self.spilled = 0
        """Entries written out of memory (to the file, and then maybe the database)."""

    def get(self, key: int) -> Value | None:
        value = self._mem.get(key)
        if value is None and self.spilled and self._lo <= key <= self._hi:
            row = self._database().execute("SELECT a, b FROM m WHERE k = ?", (key,)).fetchone()
            value = (row[0], row[1]) if row is not None else None
        return value

    def get_many(self, keys: Iterable[int]) -> dict[int, Value]:
        """The entries of ``keys`` that are there (one query per 500 keys on disk)."""
        out: dict[int, Value] = {}
        ask: list[int] = []
        for k in keys:
            value = self._mem.get(k)
            if value is not None:
                out[k] = value
            elif self.spilled and self._lo <= k <= self._hi:
                ask.append(k)
        if ask:
            db = self._database()
            for i in range(0, len(ask), 500):
                part = ask[i : i + 500]
                marks = ",".join("?" * len(part))
                for k, a, b in db.execute(f"SELECT k, a, b FROM m WHERE k IN ({marks})", part):
                    out[k] = (a, b)
        return out

    def setdefault(self, key: int, value: Value) -> Value:
        """The value kept for ``key``: an earlier one if set, else ``value`` (now set)."""
        known = self.get(key)
        if known is not None:
            return known
        self.put_new(key, value)
        return value

    def put_new(self, key: int, value: Value) -> None:
        """Set ``key``, which the caller knows is not set yet (:meth:`get_many`)."""
        self._mem[key] = value
        if len(self._mem) >= self.block:
            self._spill()

    def put_many(self, keys: Sequence[int], values: Iterable[Value]) -> None:
        """:meth:`put_new` of each key with its value: ``keys`` are distinct and none is set
        yet (the caller knows: :meth:`get_many`). One ``dict.update``, the loop in C."""
        self._mem.update(zip(keys, values, strict=True))
        if len(self._mem) >= self.block:
            self._spill()

    def setdefault_many(self, keys: Sequence[int], values: Sequence[Value]) -> None:
        """:meth:`setdefault` of each key with its value, in order; at once (:meth:`put_many`)
        when the keys are distinct, none is in memory and all are outside the range written
        to disk (a chunk's records just created)."""
        mem = self._mem
        if keys and (
            len(set(keys)) == len(keys)
            and not any(map(mem.__contains__, keys))
            and (not self.spilled or min(keys) > self._hi or max(keys) < self._lo)
        ):
            self.put_many(keys, values)
            return
        for key, value in zip(keys, values, strict=True):
            self.setdefault(key, value)

    def _spill(self) -> None:
        """Append the entries in memory to the file as one block (no query, no index); once
        the database exists, insert them into it."""
        keys = self._mem.keys()
        lo, hi = min(keys), max(keys)
        if self.spilled:
            lo, hi = min(lo, self._lo), max(hi, self._hi)
        values = self._mem.values()
        if self._db is not None:  # a key was asked inside the range before: into it at once
            rows = zip(keys, map(_a, values), map(_b, values), strict=True)  # built in C
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR IGNORE INTO m VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")
        else:
            texts = orjson.dumps(list(map(_b, values)))
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="recordsync-spill-")  # noqa: SIM115
            self._file.seek(0, 2)
            self._blocks.append((self._file.tell(), len(keys), len(texts)))
            self._file.write(array("q", keys).tobytes() + array("q", map(_a, values)).tobytes())
            self._file.write(texts)
        self._lo, self._hi = lo, hi
        self.spilled += len(keys)
        self._mem = {}

    def _database(self) -> sqlite3.Connection:
        """The temporary database, holding every block written so far."""
        if self._db is None:
            # "": a private database in a temporary file, deleted when it is closed
            self._db = sqlite3.connect("", check_same_thread=False, isolation_level=None)
            self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self._db.execute("PRAGMA journal_mode = OFF")
            self._db.execute("PRAGMA synchronous = OFF")
            self._db.execute("CREATE TABLE m (k INTEGER PRIMARY KEY, a INTEGER, b TEXT)")
        if self._blocks:
            assert self._file is not None
            self._db.execute("BEGIN")
            for offset, n, size in self._blocks:
                self._file.seek(offset)
                keys, rows = array("q"), array("q")
                keys.frombytes(self._file.read(8 * n))
                rows.frombytes(self._file.read(8 * n))
                texts = orjson.loads(self._file.read(size))
                rows_in = zip(keys, rows, texts, strict=True)
                self._db.executemany("INSERT OR IGNORE INTO m VALUES (?, ?, ?)", rows_in)
            self._db.execute("COMMIT")
            self._blocks = []
            self._file.close()  # all in the database now
            self._file = None
        return self._db

    def close(self) -> None:
        self._mem = {}
        self._blocks = []
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._db is not None:
            self._db.close()
            self._db = None
        self.spilled = 0

    __del__ = close


class KeySpool:
    """Strings in the order added: the last :data:`BLOCK` in memory, the rest in a temporary
    file (one JSON string a line), deleted when the spool is closed or collected."""

    def __init__(self, block: int | None = None) -> None:
        self.block = block or BLOCK
        self._mem: list[str] = []
        self._file: IO[bytes] | None = None
        self.spilled = 0

    def extend(self, keys: Iterable[str]) -> None:
        self._mem.extend(keys)
        if len(self._mem) >= self.block:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="recordsync-keys-")  # noqa: SIM115
            self._file.write(b"".join(orjson.dumps(k) + b"\n" for k in self._mem))
            self.spilled += len(self._mem)
            self._mem = []

    def __iter__(self) -> Iterator[str]:
        if self._file is not None:
            self._file.flush()
            self._file.seek(0)
            for line in self._file:
                yield str(orjson.loads(line))
            self._file.seek(0, 2)  # more may be added after
        yield from list(self._mem)

    def close(self) -> None:
        self._mem = []
        if self._file is not None:
            self._file.close()
            self._file = None

    __del__ = close  # dropped without closing (a step stopped): no file left open

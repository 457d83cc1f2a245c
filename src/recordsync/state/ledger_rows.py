"""The identity ledger's rows and update rules, shared by the store
(:mod:`recordsync.state.store`) and the journal's bulk fold
(:mod:`recordsync.state.journal`): what an acknowledged result writes.

    created / updated   record_id (kept when the service gave none), input_hash, status, run
    failed / in_doubt   only last_status and last_run: the row is sent again next run
    anything else       ignored (unchanged, invalid and duplicate rows were not sent)

How a row is stored (schema version 7; :class:`Entry` gives it back as text):

    input_hash    8 bytes (the 16 hex characters of :func:`recordsync.state.hashing.input_hash`
                  as bytes; version 6 kept the 16 bytes of a 128-bit hash); any other text,
                  tagged so that it is never 8 bytes long (:func:`pack_hash`,
                  :func:`unpack_hash`)
    last_status   a small integer (:data:`STATUS_CODES`)
    last_run      the run's number in ``run_numbers`` (run_no → run_id, at: when the run got
                  its number, epoch seconds); when the row was written is the run's time
                  (version 6 kept each row's own ``updated_at``, a time the run's says well
                  enough: 5 bytes a row)
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain
from typing import Any, NamedTuple, cast

ACKED_SENT = frozenset({"created", "updated"})
ACKED_FAILED = frozenset({"failed", "in_doubt"})
DELETED = "deleted"

STATUS_CODES: dict[str, int] = {"created": 0, "updated": 1, "failed": 2, "in_doubt": 3, DELETED: 4}
"""A ledger status as stored. ``created`` and ``updated`` (nearly every row) are 0 and 1, which
SQLite keeps in a row's header alone: no byte of payload."""
STATUS_NAMES: dict[int, str] = {code: name for name, code in STATUS_CODES.items()}


def status_sql(*names: str) -> str:
    """The stored codes of ``names`` as SQL literals, comma-separated (for ``IN (...)``, ``=``)."""
    return ", ".join(str(STATUS_CODES[n]) for n in names)


LIVE_SQL = f"last_status <> {status_sql(DELETED)}"
"""SQL: the entry is not marked deleted."""

_HASH = re.compile(r"[0-9a-f]+")
_HASH_BYTES = 8
_V6_HASH_BYTES = 16


def pack_hash(text: str | None) -> bytes | None:
    """An input hash as the ledger keeps it: 16 lowercase hex characters as their 8 bytes;
    any other text as its UTF-8 bytes behind a tag byte (0, or 1 with a trailing 0 byte where
    that would make 8 bytes), so that only a hash is ever 8 bytes long."""
    if text is None:  # inline, not _pack: called for every row acknowledged
        return None
    if len(text) == 2 * _HASH_BYTES and _HASH.fullmatch(text):
        return bytes.fromhex(text)
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) + 1 == _HASH_BYTES:
        return b"\x01" + raw + b"\x00"
    return b"\x00" + raw


def pack_hashes(texts: Sequence[str | None]) -> list[bytes | None]:
    """:func:`pack_hash` of each of ``texts``, at once when every one is a hash (lowercase hex
    characters, as many as :func:`recordsync.state.hashing.input_hash` gives): one ``fromhex``
    of them all, cut in pieces of the hash's bytes."""
    if None in texts or set(map(len, cast(Sequence[str], texts))) != {2 * _HASH_BYTES}:
        return list(map(pack_hash, texts))
    joined = "".join(cast(Sequence[str], texts))
    try:
        raw = bytes.fromhex(joined)
    except ValueError:
        return list(map(pack_hash, texts))
    if raw.hex() != joined:  # upper case or blanks: not the hashes pack_hash takes whole
        return list(map(pack_hash, texts))
    ends = range(_HASH_BYTES, len(raw) + 1, _HASH_BYTES)
    return list(map(raw.__getitem__, map(slice, range(0, len(raw), _HASH_BYTES), ends)))


def unpack_hash(stored: Any) -> str | None:
    """The text :func:`pack_hash` was given (a value of the ledger's ``input_hash``)."""
    return _unpack(stored, _HASH_BYTES)


def pack_hash_v6(text: str | None) -> bytes | None:
    """:func:`pack_hash` as state schema version 6 kept a hash (32 hex characters as 16
    bytes; other texts never 16 bytes long): for the upgrade of a version 5 ledger."""
    return _pack(text, _V6_HASH_BYTES)


def hash_v6_to_v7(stored: Any) -> bytes | None:
    """A version 6 ledger's ``input_hash`` as version 7 keeps it: a hash's first 8 bytes (the
    first 64 bits, which :func:`recordsync.state.hashing.input_hash` gives now); any other
    text tagged anew."""
    if stored is None:
        return None
    raw = bytes(stored)
    if len(raw) == _V6_HASH_BYTES:
        return raw[:_HASH_BYTES]
    return pack_hash(_unpack(raw, _V6_HASH_BYTES))


def _pack(text: str | None, size: int) -> bytes | None:
    if text is None:
        return None
    if len(text) == 2 * size and _HASH.fullmatch(text):
        return bytes.fromhex(text)
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) + 1 == size:
        return b"\x01" + raw + b"\x00"
    return b"\x00" + raw


def _unpack(stored: Any, size: int) -> str | None:
    if stored is None:
        return None
    raw = bytes(stored)
    if len(raw) == size:
        return raw.hex()
    if raw[:1] == b"\x01":
        return raw[1:-1].decode("utf-8", "surrogatepass")
    return raw[1:].decode("utf-8", "surrogatepass")


def epoch_now() -> int:
    """Now in epoch seconds (a run's time in ``run_numbers``)."""
    return int(time.time())


@lru_cache(maxsize=1024)
def epoch_text(seconds: Any) -> str:
    """Epoch seconds as ISO 8601 UTC text, as :func:`utc_now` writes ("" for None: a row no
    run wrote, or a run whose time is not known). Remembered: a ledger's rows hold the times
    of the few runs that wrote them, so each is made into text once, not once a row."""
    if seconds is None:
        return ""
    when = datetime.fromtimestamp(int(seconds), UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Entry(NamedTuple):
    """One ledger row: what the last acknowledged send of ``source_key`` left behind."""

    source_key: str
    record_id: int | None
    input_hash: str | None
    last_status: str
    last_run_id: str | None
    updated_at: str
    """When the run that wrote it got its number (ISO UTC; "" if not known)."""


ENTRY_SQL = (
    "SELECT l.source_key, l.record_id, l.input_hash, l.last_status, r.run_id, r.at"
    " FROM ledger l LEFT JOIN run_numbers r ON r.run_no = l.last_run"
)
"""The columns :func:`entry` reads (the ledger as ``l``; add ``WHERE l....``)."""


def entry(row: tuple[Any, ...]) -> Entry:
    """An :data:`ENTRY_SQL` row as an :class:`Entry` (hash, status and time as text)."""
    key, record_id, stored, code, run_id, updated = row
    return Entry(
        key, record_id, unpack_hash(stored), STATUS_NAMES[int(code)], run_id, epoch_text(updated)
    )


class AckRow(NamedTuple):
    """One acknowledged result for :meth:`StateStore.record_acknowledged`."""

    key: str | None
    record_id: int | None
    input_hash: str | None
    status: str


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_SENT_CODES = status_sql(*sorted(ACKED_SENT))

LEDGER_ON_CONFLICT = (
    " ON CONFLICT (scope_id, source_key) DO UPDATE SET"
    f" record_id = CASE WHEN excluded.last_status IN ({_SENT_CODES})"
    " THEN coalesce(excluded.record_id, ledger.record_id) ELSE ledger.record_id END,"
    f" input_hash = CASE WHEN excluded.last_status IN ({_SENT_CODES})"
    " THEN excluded.input_hash ELSE ledger.input_hash END,"
    " last_status = excluded.last_status, last_run = excluded.last_run"
)
"""The ledger update rules, for an insert of ledger rows (one at a time here, or in bulk from
the journal: ``recordsync.state.journal``)."""

LEDGER_UPSERT = (
    "INSERT INTO ledger (scope_id, source_key, record_id, input_hash, last_status,"
    " last_run) VALUES (?1, ?2, ?3, ?4, ?5, ?6)" + LEDGER_ON_CONFLICT
)
"""The ledger update rules, one row at a time: created / updated write the record id (kept
when none is given) and the hash; failed / in_doubt only the status and run (a new key gets
no record id and no hash). ``recordsync.state.journal`` applies the same rules in bulk.
Parameters as stored: :func:`pack_hash`, :data:`STATUS_CODES`, the run's number."""


_INSERT, _ROW = LEDGER_UPSERT.split(" ON CONFLICT ")[0].split(" VALUES ")
_COLUMNS = _ROW.count("?")
"""Parameters of a ledger row (:data:`LEDGER_UPSERT`)."""
_MANY = 100
"""Ledger rows a multi-row upsert writes (:func:`upsert_ledger`)."""
LEDGER_UPSERT_MANY = (
    _INSERT + " VALUES " + ",".join([f"({','.join('?' * _COLUMNS)})"] * _MANY) + LEDGER_ON_CONFLICT
)
""":data:`LEDGER_UPSERT` of :data:`_MANY` rows in one statement. SQLite applies a
statement's rows in order, each seeing the ones before it (a key given twice ends with its
last row), as one statement a row does; PostgreSQL refuses a key twice in one statement."""


def upsert_ledger(conn: Any, rows: Sequence[tuple[object, ...]], *, many: bool = True) -> None:
    """:data:`LEDGER_UPSERT` of each of ``rows`` (parameters as stored), in order: with
    ``many`` (SQLite), :data:`_MANY` rows a statement, the rest one a statement; without
    (PostgreSQL), one a statement."""
    whole = len(rows) - len(rows) % _MANY if many else 0
    for at in range(0, whole, _MANY):
        conn.execute(LEDGER_UPSERT_MANY, list(chain.from_iterable(rows[at : at + _MANY])))
    if whole < len(rows):
        conn.executemany(LEDGER_UPSERT, rows[whole:])


def write_acknowledged(
    conn: sqlite3.Connection,
    scope: int,
    run_no: int,
    rows: Iterable[tuple[str | None, int | None, str | None, str]],
) -> int:
    """The ledger update rules (module docstring), inside the caller's transaction; in row
    order (a key given twice ends with its last result). ``run_no``: the run's number
    (:meth:`recordsync.state.store.StateStore.run_number`)."""
    params: list[tuple[object, ...]] = []
    for key, record_id, input_hash, status in rows:
        if key is None:
            continue
        status = str(status)
        if status in ACKED_SENT:
            code = STATUS_CODES[status]
            params.append((scope, key, record_id, pack_hash(input_hash), code, run_no))
        elif status in ACKED_FAILED:
            params.append((scope, key, None, None, STATUS_CODES[status], run_no))
    if params:
        conn.executemany(LEDGER_UPSERT, params)
    return len(params)

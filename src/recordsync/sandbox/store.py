"""SQLite storage of the sandbox: one records table for every object type.

- One ``id`` sequence for all types (record ids are unique across types).
- ``data`` holds the field values as JSON; system columns hold id, name, timestamps.
- Dedup keys (see :mod:`recordsync.sandbox.normalize`) live in indexed columns, and every
  look-up goes through a partial index over live rows: never a scan
  (tests/sandbox/test_store.py checks the query plans).
- One connection guarded by a lock; WAL; :meth:`Store.transaction` wraps a request's
  reads and writes so that a request that fails changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    object_type_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    profile_image_url TEXT,
    data TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    deleted_at TEXT,
    email_norm TEXT,
    domain_norm TEXT,
    linkedin_norm TEXT,
    name_norm TEXT
);
"""


def _index(name: str, columns: str, where: str = "") -> str:
    sql = f"CREATE INDEX IF NOT EXISTS {name} ON records ({columns})"
    return f"{sql} WHERE {where}" if where else sql


LIVE = "deleted_at IS NULL"
INDEXES = {
    "records_type_live": _index("records_type_live", "object_type_id, deleted_at"),
    "records_live_updated": _index("records_live_updated", "object_type_id, updated_at", LIVE),
    "records_live_name": _index("records_live_name", "object_type_id, name", LIVE),
    **{
        f"records_live_{key}": _index(
            f"records_live_{key}",
            f"object_type_id, {column}",
            f"{LIVE} AND {column} IS NOT NULL",
        )
        for key, column in (
            ("email", "email_norm"),
            ("domain", "domain_norm"),
            ("linkedin", "linkedin_norm"),
            ("name_norm", "name_norm"),
        )
    },
}
"""Secondary indexes by name: listing and counting by type, the newest edits first (a nightly
run reads ``sort_by=updated_at`` pages and the count to check the target), match_by name, and
one per dedup key (over live rows that have that key)."""
OBSOLETE_INDEXES = ("records_type_id",)
"""Indexes of earlier sandboxes that :data:`INDEXES` replaces (dropped when a store opens)."""
SKILL_RUNS = """
CREATE TABLE IF NOT EXISTS skill_runs (
    id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    signed INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
"""

COLUMNS = (
    "id, object_type_id, name, profile_image_url, data, created_at, updated_at, deleted_at,"
    " email_norm, domain_norm, linkedin_norm, name_norm"
)
KEY_COLUMNS = ("email_norm", "domain_norm", "linkedin_norm", "name_norm")


Keys = tuple[str | None, str | None, str | None, str | None]
"""Dedup keys in KEY_COLUMNS order: email, domain, LinkedIn URL, company name."""
NO_KEYS: Keys = (None, None, None, None)


@dataclass(slots=True)
class Row:
    id: int
    object_type_id: int
    name: str
    profile_image_url: str | None
    data: dict[str, Any]
    created_at: str
    updated_at: str
    deleted_at: str | None
    keys: Keys
    """The dedup keys as stored (so that an update rewrites only the ones that changed)."""


def _row(t: Sequence[Any]) -> Row:
    return Row(t[0], t[1], t[2], t[3], json.loads(t[4]), t[5], t[6], t[7], tuple(t[8:12]))


def _fold(text: str | None) -> str | None:
    """Unicode case folding, for searches and filters (``ZOË`` finds ``Zoë``)."""
    return text.casefold() if isinstance(text, str) else text


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
dumps = _ENCODER.encode


SQL_MAX_OFFSET = 2**62
"""SQLite takes 64-bit offsets; a larger one asked for still echoes in ``pagination``."""


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        # OFF: a commit survives a crash of the process (the sandbox's case), not of the OS
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("PRAGMA cache_size=-131072")  # 128 MiB of page cache
        self.db.execute("PRAGMA mmap_size=1073741824")
        self.db.execute("PRAGMA temp_store=MEMORY")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.create_function("rs_fold", 1, _fold, deterministic=True)
        self.db.executescript(SCHEMA + SKILL_RUNS)
        for name in OBSOLETE_INDEXES:
            self.db.execute(f"DROP INDEX IF EXISTS {name}")
        for index in INDEXES.values():
            self.db.execute(index)

    def close(self) -> None:
        with self.lock:
            self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the lock and one SQLite transaction; roll back on any exception."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # --- writes -------------------------------------------------------------------------
    def insert(
        self,
        type_id: int,
        name: str,
        image: str | None,
        data: dict[str, Any],
        keys: Keys,
        now: str,
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO records (object_type_id, name, profile_image_url, data, created_at,"
            " updated_at, email_norm, domain_norm, linkedin_norm, name_norm)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (type_id, name, image, dumps(data), now, now, *keys),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def update(self, row: Row, keys: Keys, *, name_changed: bool) -> None:
        """Write ``row`` back; indexed columns are set only when they changed."""
        sets = ["profile_image_url = ?", "data = ?", "updated_at = ?"]
        params: list[Any] = [row.profile_image_url, dumps(row.data), row.updated_at]
        if name_changed:
            sets.append("name = ?")
            params.append(row.name)
        for column, old, new in zip(KEY_COLUMNS, row.keys, keys, strict=True):
            if old != new:
                sets.append(f"{column} = ?")
                params.append(new)
        row.keys = keys
        self.db.execute(f"UPDATE records SET {', '.join(sets)} WHERE id = ?", [*params, row.id])

    def soft_delete(self, record_id: int, now: str) -> None:
        self.db.execute(
            "UPDATE records SET deleted_at = ?, updated_at = ? WHERE id = ?",
            (now, now, record_id),
        )

    def bulk_insert(
        self, type_id: int, rows: Iterable[tuple[str, dict[str, Any], Keys]], now: str
    ) -> int:
        """Insert many rows in one transaction (pre-population; no validation).

        The secondary indexes are dropped first and built again after the insert, which
        is several times faster than maintaining them row by row.
        """
        count = 0

        def params() -> Iterator[tuple[Any, ...]]:
            nonlocal count
            for name, data, keys in rows:
                count += 1
                yield (type_id, name, dumps(data), now, now, *keys)

        with self.transaction():
            for name in INDEXES:
                self.db.execute(f"DROP INDEX IF EXISTS {name}")
            self.db.executemany(
                "INSERT INTO records (object_type_id, name, data, created_at, updated_at,"
                " email_norm, domain_norm, linkedin_norm, name_norm)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                params(),
            )
            for index in INDEXES.values():
                self.db.execute(index)
        return count

    # --- reads ----------------------------------------------------------------------------
    def get(self, record_id: int, type_id: int, *, include_deleted: bool = False) -> Row | None:
        sql = f"SELECT {COLUMNS} FROM records WHERE id = ? AND object_type_id = ?"
        if not include_deleted:
            sql += " AND deleted_at IS NULL"
        t = self.db.execute(sql, (record_id, type_id)).fetchone()
        return _row(t) if t is not None else None

    def find_by_key(self, type_id: int, column: str, key: str) -> Row | None:
        """The live record with the lowest id whose dedup column equals ``key``."""
        if column not in KEY_COLUMNS and column != "name":
            raise ValueError(column)
        t = self.db.execute(
            f"SELECT {COLUMNS} FROM records WHERE object_type_id = ? AND {column} = ?"
            " AND deleted_at IS NULL ORDER BY id LIMIT 1",
            (type_id, key),
        ).fetchone()
        return _row(t) if t is not None else None

    def live_type_of(self, record_id: int) -> int | None:
        t = self.db.execute(
            "SELECT object_type_id FROM records WHERE id = ? AND deleted_at IS NULL", (record_id,)
        ).fetchone()
        return int(t[0]) if t is not None else None

    def live_ids(self, ids: Iterable[int]) -> set[int]:
        wanted = sorted(set(ids))
        found: set[int] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT id FROM records WHERE id IN ({marks}) AND deleted_at IS NULL", chunk
                )
            )
        return found

    def select(
        self, where: str, params: list[Any], order: str, limit: int, offset: int
    ) -> tuple[list[Row], int]:
        """One page of records and the total count (``where`` and ``order`` are built by
        :mod:`recordsync.sandbox.query` from checked field names only)."""
        total = self.db.execute(f"SELECT COUNT(*) FROM records WHERE {where}", params).fetchone()
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
            [*params, limit, min(offset, SQL_MAX_OFFSET)],  # past any table: an empty page
        ).fetchall()
        return [_row(t) for t in rows], int(total[0])

    # --- skill runs ------------------------------------------------------------------------
    def add_skill_run(
        self, run_id: str, skill_id: str, payload: Any, signed: bool, now: str
    ) -> None:
        self.db.execute(
            "INSERT INTO skill_runs (id, skill_id, payload, signed, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (run_id, skill_id, dumps(payload), int(signed), now),
        )

    def skill_runs(self) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.db.execute(
                "SELECT id, skill_id, payload, signed, created_at FROM skill_runs"
                " ORDER BY created_at, rowid"
            ).fetchall()
        return [
            {
                "id": r[0],
                "skill_id": r[1],
                "payload": json.loads(r[2]),
                "signed": bool(r[3]),
                "created_at": r[4],
            }
            for r in rows
        ]

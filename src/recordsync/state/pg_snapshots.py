"""A snapshot (the Arrow file of :mod:`recordsync.state.snapshots`) kept in a PostgreSQL
state database, as the file's bytes in ``snapshot_blocks`` rows: a worker needs no local disk
between runs; a run only uses a temporary file, which the caller deletes."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from recordsync.tuning import sizes


def load_snapshot_blocks(conn: sqlite3.Connection, scope: int, count: int) -> Path:
    """The scope's snapshot file from ``snapshot_blocks`` into a temporary file (a block at
    a time: memory holds one block, not the file)."""
    fd, name = tempfile.mkstemp(prefix=f"recordsync-scope{scope}-", suffix=".arrow")
    with os.fdopen(fd, "wb") as out:
        for block_no in range(count):
            row = conn.execute(
                "SELECT data FROM snapshot_blocks WHERE scope_id = ? AND block_no = ?",
                (scope, block_no),
            ).fetchone()
            if row is None:  # a block gone: an empty file, which the reader refuses
                out.truncate(0)  # (the full path runs, and a new snapshot follows)
                break
            out.write(row[0])
    return Path(name)


def store_snapshot_blocks(conn: sqlite3.Connection, scope: int, path: Path) -> int:
    """The snapshot file into ``snapshot_blocks``; the number of blocks."""
    count = 0
    with path.open("rb") as src:
        while block := src.read(sizes.SNAPSHOT_BLOCK_BYTES):
            conn.execute(
                "INSERT INTO snapshot_blocks (scope_id, block_no, data) VALUES (?, ?, ?)",
                (scope, count, block),
            )
            count += 1
    return count

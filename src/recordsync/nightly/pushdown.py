"""A step whose change detection runs in the database (``source: {change_detection:
database}``, docs/state.md "Large tables"): only the new, changed and vanished keys leave it.

The database keeps, in a schema recordsync manages there (:mod:`recordsync.read.pg_diff`; a
DuckDB query: in a DuckDB file beside the state store, :mod:`recordsync.read.duckdb_diff`),
the ``(key, digest)`` of every row the last run left synced; the state store keeps, as the
step's snapshot (:mod:`recordsync.state.snapshots`), the same keys with their record ids.
The two hold the same keys whenever a snapshot is registered: the table is updated at the
step's end, after the ledger is written and before the new snapshot is registered, and a
step begins by unregistering the old one. So:

- a snapshot (same fingerprint) → a **diff pass**: the diff is materialized by one query; its
  rows are read and prepared as any source's (duplicate keys, merges, the ledger's input
  hashes decide what is sent); the snapshot's other keys are reported ``unchanged`` (numbered
  after the rows read), and count as present for mirror deletes, so the keys that vanished
  are exactly the ones the ledger still holds and no row has;
- no snapshot (a first run, a changed mapping, schema, users or query columns, a run that
  died, ``--full-refresh``, records edited in the target) → a **full pass**: the scope's
  synced rows are forgotten and every row is read (the ledger still finds the unchanged ones
  unchanged: nothing is sent twice).

The journal and the ledger stay the source of truth for what was sent: a run killed between
an acknowledgement and the table's update leaves no snapshot, so the next run takes a full
pass, and its rows already sent are found in the ledger (or the journal, when it resumes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.core.model import Blocks, Item, PreparedRow, UnchangedBlock
from recordsync.nightly.acked_keys import AckedKeysWriter
from recordsync.nightly.claims import Claims as _Claims
from recordsync.nightly.unchanged_rows import UnchangedRows
from recordsync.prepare.merge_rules import kind_of
from recordsync.read.duckdb_diff import DuckDiffTable
from recordsync.read.pg_diff import DiffUnavailable, DigestTable
from recordsync.read.sql_diff import scope_of
from recordsync.state.snapshots import Snapshot
from recordsync.tuning.native_memory import give_back

log = logging.getLogger(__name__)

FORMAT_TAG = b"recordsync-database-digest-v2\n"  # v2: PostgreSQL 64-bit hashes
BLOCK_ROWS = 65_536
"""Unchanged rows reported in one block."""
_NAMES = ["key", "match_by", "match_value", "record_id"]
_READ = (0, 0)
"""The digest of a row read from the diff (its snapshot row needs one; never matched)."""


class Pushdown:
    """One step's change detection in the database: :meth:`open`, :meth:`items`, and at the
    step's end :meth:`update`; :meth:`close` in any case."""

    def __init__(
        self,
        config: MappingConfig,
        state_key: str,
        mapping: str,
        base_dir: Path,
        directory: Path | None,
    ) -> None:
        """``directory``: where a DuckDB query's table of synced rows is kept (beside a
        SQLite state store; None: the state is on PostgreSQL)."""
        self.config = config
        scope = scope_of(state_key, mapping)
        self.table: DigestTable | DuckDiffTable | None = None
        if config.source.engine == "postgres":
            self.table = DigestTable(config.source, scope)
        elif directory is not None:
            self.table = DuckDiffTable(config.source, scope, base_dir, directory)
        self.full = True
        """Whether this step reads every row (no usable snapshot)."""
        self.rows_read = 0
        self.unchanged = 0

    def open(self) -> str | None:
        """Connect and check the privileges; the warning to give when the database cannot
        keep the table (the step then reads the whole query), else None."""
        if self.table is None:
            return (
                f"{self.config.source.label}: a DuckDB query keeps its table of synced rows"
                " beside a SQLite state store, and this run's state is on PostgreSQL;"
                " change_detection: database is off for this run and the whole query is read"
            )
        try:
            self.table.open()
        except DiffUnavailable as exc:
            self.close()
            return (
                f"{exc}; change_detection: database is off for this run and the whole query"
                " is read (grant the privilege, or set source.state_schema to a schema the"
                " user may write)"
            )
        return None

    def fingerprint(self, fp: bytes) -> bytes:
        """The step's fingerprint for this mode: the digest's format, and the query's
        columns and types besides what ``fp`` covers."""
        assert self.table is not None
        h = blake2b(FORMAT_TAG, digest_size=16)
        h.update(fp)
        h.update(self.config.source.engine.encode())
        h.update(f"{self.table.digest_kind}\x00".encode())
        for name, typ in self.table.columns:
            h.update(f"{name}\x00{typ}\x00".encode())
        return h.digest()

    def items(
        self,
        rows_of: Callable[[Any], Iterable[PreparedRow]],
        snapshot: Snapshot | None,
        fp: bytes,
        writer: AckedKeysWriter,
    ) -> Iterable[Item]:
        """The step's items: the diff's rows, prepared, then the snapshot's rows the diff
        leaves out as UnchangedBlocks."""
        src = self.config.source
        table = self.table
        assert src.key is not None and table is not None
        key = src.key[0]
        columns = list(dict.fromkeys([*self.config.source_columns(), key]))
        table.diff(key, columns, fp, full=snapshot is None)
        pos = UnchangedRows(0)
        if snapshot is not None:
            pos = _left_out(snapshot, table.diff_keys())
            expected = table.unchanged_count()
            if len(pos) != expected:  # keys the snapshot has and the table not: left out
                _keep_synced(snapshot, pos, table.synced_keys())
            if len(pos) != expected:  # still apart: read every row once
                log.warning(
                    "%s: the database's synced keys (%d unchanged) and the snapshot's (%d)"
                    " disagree; every row is read this run",
                    src.label,
                    expected,
                    len(pos),
                )
                snapshot = None
                writer.source = None
                pos = UnchangedRows(0)
                table.diff(key, columns, fp, full=True)
        self.full = snapshot is None
        narrowed = src.model_copy(update={**table.source_update(), "change_detection": "client"})
        derived = self.config.model_copy(update={"source": narrowed})
        rows = rows_of(derived)
        shared = rows.ledger_shared if isinstance(rows, Blocks) else None
        return Blocks(self._lists(rows, snapshot, pos), shared)

    def _lists(
        self, rows: Iterable[PreparedRow], snapshot: Snapshot | None, pos: UnchangedRows
    ) -> Iterator[list[Item]]:
        lists: Iterable[list[PreparedRow]]
        lists = rows.lists if isinstance(rows, Blocks) else ([r] for r in rows)
        last = 0
        guard = None
        if snapshot is not None and len(pos) and self._guarded():
            guard = _Claims(snapshot, pos)
        try:
            for part in lists:
                for r in part:
                    r.digest = _READ
                if guard is not None:
                    guard.hold(part)
                if part:
                    last = max(last, part[-1].source.source_row)
                self.rows_read += len(part)
                yield list(part)
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()
        if snapshot is None or not len(pos):
            return
        label = self.config.source.label
        for at in pos.blocks(BLOCK_ROWS):
            give_back()  # the blocks before, reported and carried into the next snapshot
            got = snapshot.take(at, _NAMES)
            i = self.unchanged
            lines = np.arange(last + 1 + i, last + 1 + i + len(at), dtype=np.int64)
            self.unchanged += len(at)
            yield [UnchangedBlock(label, lines, at, *got.columns)]

    def _guarded(self) -> bool:
        """Whether rows read must not land on an unchanged row's record: a type the
        service deduplicates, merges held (mapping.md, "Merges")."""
        return kind_of(self.config.object_type) is not None and self.config.merges == "hold"

    def step_done(self, step: str, writer: object) -> str | None:
        """The step completed and its ledger is written: update the database's table from
        ``writer`` (the step's snapshot writer), and close. The warning to give when that
        failed (the step's new snapshot must then be dropped: the next run reads every
        row), else None."""
        try:
            if isinstance(writer, AckedKeysWriter):
                self.update(writer)
        except SourceError as exc:  # the rows are sent: the next run reads every row
            note = f"step {step}: {exc}; the next run reads every row of the query"
            log.warning("%s", note)
            return note
        finally:
            self.close()
        return None

    def update(self, writer: AckedKeysWriter) -> None:
        """The step is complete and its ledger written: the database's table takes the
        acknowledged keys of the rows read (before the new snapshot is registered)."""
        assert self.table is not None
        synced = self.table.update(writer.acked())
        log.info(
            "%s: %d rows read from the database's diff, %d unchanged there; %d keys synced",
            self.config.source.label,
            self.rows_read,
            self.unchanged,
            synced,
        )

    def close(self) -> None:
        if self.table is not None:
            self.table.close()


def _keep_synced(snapshot: Snapshot, pos: UnchangedRows, synced: list[str]) -> None:
    """Of the snapshot's rows ``pos``, keep those whose key the database's table holds (a
    key whose text the database spells otherwise is never in the table: its row is read
    from the diff every run)."""
    value_set = pa.array(synced, pa.string())

    def held(at: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        keys = snapshot.take(at, ["key"]).column(0)
        found = pc.fill_null(pc.is_in(keys, value_set=value_set), False)
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)

    pos.keep(held)


def _left_out(snapshot: Snapshot, diff_keys: list[str]) -> UnchangedRows:
    """The snapshot's rows whose key is not in ``diff_keys``."""
    keys = snapshot.table.column("key")
    if not diff_keys:
        return UnchangedRows.every(len(keys))
    value_set = pa.array(diff_keys, pa.string())
    found = []
    for chunk in keys.chunks:  # a record batch of the file at a time
        found.append(pc.is_in(chunk, value_set=value_set))
        snapshot.release()  # the batch's keys, read once: out of memory again
    return UnchangedRows.where_not(pa.chunked_array(found, pa.bool_()))

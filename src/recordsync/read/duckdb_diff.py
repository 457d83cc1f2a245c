"""The DuckDB side of ``change_detection: database`` (:mod:`.pg_diff` is PostgreSQL's): the
table of synced rows and the diff live in a DuckDB file of the state directory
(``<state>/synced/<scope>.duckdb``), attached to the connection that runs the source's query,
so the diff is one query inside DuckDB and only its rows reach recordsync (SQL text:
:mod:`.sql_diff`). The source itself (files, or a database file) stays read-only.

The step's rows are read from that file (its ``diff_<scope>`` table) by the ordinary reader:
the connection that wrote it is closed first (a DuckDB file has one writer at a time), and
opened again for the update at the step's end. What the diff's joins and window do not fit in
``source.memory_limit`` spills to a temporary directory of the connection's own, removed
when it closes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read.sql import _duckdb_connect, duckdb_out_of_memory
from recordsync.read.sql_diff import (
    SYNCED,
    create_synced,
    diff_rows_query,
    diff_table_sql,
    literal,
    qualified,
)

_CATALOG = "rs."


class DuckDiffTable:
    """One step's diff in DuckDB: the same steps as :class:`.pg_diff.DigestTable`."""

    def __init__(self, src: SourceConfig, scope: str, base_dir: Path, directory: Path) -> None:
        self.src = src
        self.scope = scope
        self.base_dir = base_dir
        self.file = (directory / f"{scope}.duckdb").resolve()
        self.schema = src.state_schema
        self.diff_table = _CATALOG + qualified(self.schema, "diff_" + scope)
        self.synced = _CATALOG + qualified(self.schema, SYNCED)
        self.columns: list[tuple[str, str]] = []
        self.digest_kind = "md5"
        """Which digest the diff computes (:func:`.sql_diff.digest_sql`)."""
        self._con: Any = None
        self._spill: tempfile.TemporaryDirectory[str] | None = None

    def _fail(self, exc: Exception) -> SourceError:
        oom = duckdb_out_of_memory(self.src, "change detection in DuckDB", exc)
        if oom is not None:
            return oom
        return SourceError(
            f"{self.src.label}: change detection in DuckDB failed: {exc}",
            key="source.change_detection",
            hint="check the query; without change_detection: database the source is read whole",
        )

    def _connect(self) -> Any:
        if self._con is None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self._spill = tempfile.TemporaryDirectory(prefix="recordsync-duckdb-")
            try:
                con = _duckdb_connect(self.src, self.base_dir, self._spill.name)
            except BaseException:
                self._drop_spill()
                raise
            self._con = con
            con.execute(f"ATTACH {literal(str(self.file))} AS rs")
            con.execute("SET TimeZone = 'UTC'")
        return self._con

    def _drop_spill(self) -> None:
        if self._spill is not None:
            try:
                self._spill.cleanup()
            finally:
                self._spill = None

    def open(self) -> None:
        """Attach the state file, read the query's columns and types, create the table."""
        import duckdb

        try:
            con = self._connect()
            body = (self.src.query or "").strip().rstrip(";")
            rel = con.sql(f"SELECT * FROM (\n{body}\n) AS q LIMIT 0")
            self.columns = [(n, str(t)) for n, t in zip(rel.columns, rel.types, strict=True)]
            for statement in create_synced(self.schema, _CATALOG):
                con.execute(statement)
        except duckdb.Error as exc:
            raise self._fail(exc) from None

    def diff(self, key: str, columns: list[str], salt: bytes, *, full: bool) -> None:
        import duckdb

        assert self.src.query is not None
        try:
            con = self._connect()
            con.execute(f"DROP TABLE IF EXISTS {self.diff_table}")
            if full:
                con.execute(f"DELETE FROM {self.synced} WHERE scope = ?", [self.scope])
            sql = diff_table_sql(
                self.src.query, key, columns, salt, self.schema, self.scope, _CATALOG
            )
            con.execute(sql)
        except duckdb.Error as exc:
            raise self._fail(exc) from None

    def source_update(self) -> dict[str, Any]:
        """The source options the step reads instead of its own: the diff's rows, from the
        state file (the writing connection closed first)."""
        self.close()
        query = diff_rows_query(self.schema, self.scope, [c for c, _ in self.columns])
        return {"query": query, "database": str(self.file)}

    def diff_keys(self) -> list[str]:
        rows = (
            self._connect()
            .execute(
                f"SELECT DISTINCT coalesce(_rs_key, _rs_old_key) FROM {self.diff_table}"
                " WHERE coalesce(_rs_key, _rs_old_key) IS NOT NULL"
            )
            .fetchall()
        )
        return [str(r[0]) for r in rows]

    def synced_keys(self) -> list[str]:
        rows = (
            self._connect()
            .execute(f"SELECT key FROM {self.synced} WHERE scope = ?", [self.scope])
            .fetchall()
        )
        return [str(r[0]) for r in rows]

    def unchanged_count(self) -> int:
        row = (
            self._connect()
            .execute(
                f"SELECT (SELECT count(*) FROM {self.synced} WHERE scope = ?) - (SELECT"
                f" count(DISTINCT _rs_old_key) FROM {self.diff_table})",
                [self.scope],
            )
            .fetchone()
        )
        return int(row[0])

    def update(self, acked: Iterable[Any]) -> int:
        """As :meth:`.pg_diff.DigestTable.update`; ``acked``: arrays of keys."""
        import duckdb
        import pyarrow as pa

        try:
            con = self._connect()
            con.execute("BEGIN TRANSACTION")
            con.execute(
                f"DELETE FROM {self.synced} WHERE scope = ? AND key IN (SELECT"
                f" coalesce(_rs_key, _rs_old_key) FROM {self.diff_table})",
                [self.scope],
            )
            keys = pa.chunked_array(list(acked), pa.string())
            con.register("rs_acked", pa.table({"key": keys}))
            con.execute(
                f"INSERT INTO {self.synced} (scope, key, digest) SELECT DISTINCT ON"
                f" (d._rs_key) ?, d._rs_key, d._rs_digest FROM {self.diff_table} AS d"
                " JOIN rs_acked AS a ON a.key = d._rs_key WHERE d._rs_n = 1"
                " ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest",
                [self.scope],
            )
            con.unregister("rs_acked")
            con.execute(f"DROP TABLE IF EXISTS {self.diff_table}")
            got = con.execute(
                f"SELECT count(*) FROM {self.synced} WHERE scope = ?", [self.scope]
            ).fetchone()
            con.execute("COMMIT")
        except duckdb.Error as exc:
            raise self._fail(exc) from None
        return int(got[0])

    def close(self) -> None:
        """Close the connection and remove its spill directory."""
        try:
            if self._con is not None:
                try:
                    self._con.close()
                finally:
                    self._con = None
        finally:
            self._drop_spill()

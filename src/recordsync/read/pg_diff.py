"""The source database's side of ``change_detection: database`` (PostgreSQL): the table of
synced rows in a schema recordsync manages there, the diff materialized by one query, and the
table updated from the keys the service acknowledged (SQL text: :mod:`.sql_diff`).

The connection is the source's own (``source.dsn_env`` / ``source.dsn``), in a session whose
time zone is UTC (the digest covers the text of timestamps). Without the privileges it needs
(``CREATE`` on the database or the schema, ``INSERT``/``DELETE`` on its table) it raises
:class:`DiffUnavailable`, naming the privilege: the run then reads the whole query as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recordsync.config.models import SourceConfig
from recordsync.config.sqlsource import redact
from recordsync.core.errors import SourceError
from recordsync.read.sql_diff import (
    PLAIN_KEY_TYPES,
    SYNCED,
    create_synced,
    diff_counts_sql,
    diff_keys_sql,
    diff_rows_query,
    diff_rows_sql,
    diff_table_sql,
    diff_vanished_sql,
    literal,
    pg_digest_sql,
    qualified,
)
from recordsync.read.sql_pg import _dsn

log = logging.getLogger(__name__)

DIGEST_TYPE = "bigint"
"""The type of ``synced.digest`` (:func:`.sql_diff.pg_digest_sql`); a table of another
shape (an earlier recordsync's) is made again."""


WORK_MEM_KB = 64 * 1024
"""The least ``work_mem`` of a diff's transaction (a server's larger setting is kept): the
synced keys and digests of a few million rows hashed in memory, not in batches on disk."""
PARALLEL_SETUP_COST = 100.0
PARALLEL_TUPLE_COST = 0.01
"""The most a diff's transaction lets the planner charge for starting parallel workers and
for each row they pass on (a server's lower setting is kept): the planner expects every
row of the lookup to come out of it, where nearly none does on a nightly run."""


def session_settings(conn: Any) -> list[str]:
    """The ``SET LOCAL`` statements of a diff's transaction, from the server's settings: no
    JIT (compiling costs more than it saves here), at least :data:`WORK_MEM_KB` of
    ``work_mem``, and, when the server grants parallel workers (``max_parallel_workers``
    and ``max_parallel_workers_per_gather`` both above 0: neither is ever raised), parallel
    plans costed as at most :data:`PARALLEL_SETUP_COST` and :data:`PARALLEL_TUPLE_COST`.
    Without workers the statements run in one backend, as planned then."""
    workers, per_gather, setup, per_tuple, work_mem = conn.execute(
        "SELECT current_setting('max_parallel_workers')::int,"
        " current_setting('max_parallel_workers_per_gather')::int,"
        " current_setting('parallel_setup_cost')::float8,"
        " current_setting('parallel_tuple_cost')::float8,"
        " pg_size_bytes(current_setting('work_mem')) / 1024"
    ).fetchone()
    out = ["SET LOCAL jit = off"]
    if int(work_mem) < WORK_MEM_KB:
        out.append(f"SET LOCAL work_mem = '{WORK_MEM_KB}kB'")
    if int(workers) > 0 and int(per_gather) > 0:
        if float(setup) > PARALLEL_SETUP_COST:
            out.append(f"SET LOCAL parallel_setup_cost = {PARALLEL_SETUP_COST}")
        if float(per_tuple) > PARALLEL_TUPLE_COST:
            out.append(f"SET LOCAL parallel_tuple_cost = {PARALLEL_TUPLE_COST}")
    return out


_ESCAPES = (("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
"""COPY's text form: a backslash, a newline, a carriage return and a tab escaped."""


def copy_text(keys: pa.Array) -> bytes:
    """``keys`` (strings, none null) as lines of COPY's text form."""
    if not len(keys):
        return b""
    text = keys.cast(pa.string())
    for plain, escaped in _ESCAPES:
        text = pc.replace_substring(text, plain, escaped)
    lines = pc.binary_join_element_wise(text, pa.scalar(""), "\n")  # "<key>\n" each
    offsets, data = lines.buffers()[1:3]
    assert offsets is not None and data is not None
    ends = np.frombuffer(offsets, dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return bytes(data.to_pybytes()[int(ends[0]) : int(ends[-1])])


class DiffUnavailable(Exception):
    """The source database does not let recordsync keep its table of synced rows: the
    message names the privilege and the source (never the connection string)."""


UPDATE_SETTINGS = ("SET LOCAL enable_nestloop = off",)
"""The update's transaction joins the diff (a table just made, without statistics) with the
synced rows and with the keys acknowledged (a temporary table): hash joins, linear in the
tables, whatever the planner believes of their sizes (a nested loop it took for tables it
thought small rescanned the diff once per synced row: hours at 1M synced rows)."""


class DigestTable:
    """One step's diff in the source database: :meth:`open`, :meth:`diff`, read the rows
    :meth:`source_update` names, then :meth:`update` with the acknowledged keys; :meth:`close`."""

    def __init__(self, src: SourceConfig, scope: str) -> None:
        self.src = src
        self.scope = scope
        self.schema = src.state_schema
        self.diff_table = qualified(self.schema, "diff_" + scope)
        self.keys_table = qualified(self.schema, "keys_" + scope)
        self.synced = qualified(self.schema, SYNCED)
        self.columns: list[tuple[str, str]] = []
        """The query's columns and their types' names (set by :meth:`open`)."""
        self.digest_kind = ""
        """Which digest the server computes (:func:`.sql_diff.pg_digest_sql`; set by
        :meth:`open`): part of the step's fingerprint."""
        self._conn: Any = None
        self._dsn = ""
        self._synced: int | None = None
        """The scope's synced keys when the diff was made (None: not counted)."""

    def _fail(self, exc: Exception) -> SourceError:
        return SourceError(
            f"{self.src.label}: change detection in the database failed:"
            f" {redact(str(exc).strip(), self._dsn)}",
            key="source.change_detection",
            hint="check the query and the state schema; without change_detection: database"
            " the source is read whole",
        )

    def open(self) -> None:
        """Connect, read the query's columns and types, create the schema and its table
        when missing and check the privileges to write them."""
        import psycopg

        self._dsn = _dsn(self.src)
        try:
            self._conn = psycopg.connect(self._dsn, autocommit=True)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        conn = self._conn
        label = self.src.label
        try:
            # an instant's text in UTC; other values as the server writes them to any
            # session (as the rows are read: a changed server setting changes the digests)
            conn.execute("SET TIME ZONE 'UTC'")
            body = (self.src.query or "").strip().rstrip(";")
            with conn.cursor() as cur:
                try:
                    cur.execute(f"SELECT * FROM (\n{body}\n) AS q LIMIT 0".encode())
                except psycopg.Error as exc:
                    raise SourceError(
                        f"{label}: the PostgreSQL query failed:"
                        f" {redact(str(exc).strip(), self._dsn)}",
                        key="source.query",
                        hint="check the query",
                    ) from None
                desc = cur.description or []
            oids = [d.type_code for d in desc]
            names = {
                int(o): str(n)
                for o, n in conn.execute(
                    "SELECT oid, format_type(oid, NULL) FROM pg_type WHERE oid = ANY(%s)",
                    (oids,),
                ).fetchall()
            }
            self.columns = [(d.name, names.get(d.type_code, str(d.type_code))) for d in desc]
            version = int(conn.execute("SHOW server_version_num").fetchone()[0])
            self.digest_kind = "per-value" if version >= 140000 else "row-text"
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        schema = literal(self.schema)
        try:
            has = conn.execute(
                f"SELECT has_schema_privilege({schema}, 'CREATE')"
                f" FROM pg_namespace WHERE nspname = {schema}"
            ).fetchone()
            if has is None:  # no schema yet: recordsync creates it
                if not conn.execute(
                    "SELECT has_database_privilege(current_database(), 'CREATE')"
                ).fetchone()[0]:
                    raise DiffUnavailable(
                        f"{label}: the database user may not create schema {self.schema!r}"
                        " (CREATE privilege on the database)"
                    )
            elif not has[0]:
                raise DiffUnavailable(
                    f"{label}: the database user may not create tables in schema"
                    f" {self.schema!r} (CREATE privilege on the schema)"
                )
            self._create(schema=has is None)
            # one privilege at a time: given a list, has_table_privilege asks for any of them
            table = literal(self.synced)
            ok = conn.execute(
                f"SELECT has_table_privilege({table}, 'SELECT') AND has_table_privilege({table},"
                f" 'INSERT') AND has_table_privilege({table}, 'DELETE')"
            ).fetchone()[0]
            if not ok:
                raise DiffUnavailable(
                    f"{label}: the database user may not write table {self.schema}.{SYNCED}"
                    " (SELECT, INSERT and DELETE privileges)"
                )
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DiffUnavailable(
                f"{label}: the database user lacks a privilege in schema {self.schema!r}:"
                f" {redact(str(exc).strip(), self._dsn)}"
            ) from None
        except psycopg.errors.ReadOnlySqlTransaction:
            raise DiffUnavailable(
                f"{label}: the database is read-only (a standby?): it cannot keep schema"
                f" {self.schema!r}"
            ) from None
        except psycopg.Error as exc:
            raise self._fail(exc) from None

    def _create(self, *, schema: bool) -> None:
        """The table of synced rows (and the schema: ``schema``), when missing; a table whose
        digest is of another type is made again (its scopes then take a full pass). An
        existing schema is not created again: ``CREATE SCHEMA IF NOT EXISTS`` asks for the
        database's CREATE privilege even then."""
        import psycopg

        conn = self._conn
        statements = create_synced(self.schema, digest=DIGEST_TYPE)
        for statement in statements if schema else statements[1:]:
            try:
                conn.execute(statement)
            except psycopg.errors.UniqueViolation:  # another run created it meanwhile
                conn.execute(statement)
        typ = conn.execute(
            "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid ="
            f" {literal(self.synced)}::regclass AND attname = 'digest'"
        ).fetchone()
        if typ is None or typ[0] != DIGEST_TYPE:
            conn.execute(f"DROP TABLE {self.synced}")
            self._create(schema=False)

    def diff(self, key: str, columns: list[str], salt: bytes, *, full: bool) -> None:
        """Materialize the diff of the query against the synced rows; ``full``: forget the
        scope's synced rows first (every row is then new). A diff pass looks up only keys
        and digests, then reads the rows of the keys it found (:func:`.sql_diff.diff_keys_sql`);
        when a synced key is held by more than one row it takes the one query that finds
        them (:func:`.sql_diff.diff_table_sql`). One snapshot of the database throughout
        (repeatable read), in parallel workers where the server grants them
        (:func:`session_settings`)."""
        import psycopg

        assert self.src.query is not None
        query, conn = self.src.query, self._conn
        digest = pg_digest_sql(columns, salt, per_value=self.digest_kind == "per-value")
        plain = dict(self.columns).get(key) in PLAIN_KEY_TYPES
        self._synced = None
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                for statement in session_settings(conn):
                    conn.execute(statement)
                conn.execute(f"DROP TABLE IF EXISTS {self.diff_table}")
                conn.execute(f"DROP TABLE IF EXISTS {self.keys_table}")
                if full:
                    conn.execute(f"DELETE FROM {self.synced} WHERE scope = %s", (self.scope,))
                    self._synced = 0
                else:
                    once, empty = self._keys(query, key, digest, plain)
                    if once:
                        rows = diff_rows_sql(
                            query, key, digest, self.schema, self.scope, plain_key=plain,
                            empty=empty,
                        )
                        for statement in rows:
                            conn.execute(statement.encode())
                        conn.execute(f"DROP TABLE {self.keys_table}")
                        return
                    conn.execute(f"DROP TABLE {self.keys_table}")
                    log.info(
                        "%s: a synced key is held by more than one row: the diff takes the"
                        " query that finds every row of such keys",
                        self.src.label,
                    )
                sql = diff_table_sql(
                    query, key, columns, salt, self.schema, self.scope, digest=digest,
                    plain_key=plain,
                )
                conn.execute(sql.encode())
        except psycopg.Error as exc:
            raise self._fail(exc) from None

    def _keys(self, query: str, key: str, digest: str, plain: bool) -> tuple[bool, bool]:
        """The diff's keys (:func:`.sql_diff.diff_keys_sql`, and the vanished ones when the
        counts tell there are: :func:`.sql_diff.diff_counts_sql`); whether no synced key is
        held by more than one row (every row of the others is then among the keys found),
        and whether no key was found (nothing new, changed or vanished)."""
        conn = self._conn
        schema, scope = self.schema, self.scope
        conn.execute(diff_keys_sql(query, key, digest, schema, scope, plain_key=plain).encode())
        keyed, key_sum, synced, synced_sum, found, new, new_sum = conn.execute(
            diff_counts_sql(query, key, schema, scope, plain_key=plain).encode()
        ).fetchone()
        self._synced = int(synced)
        matched = int(keyed) - int(new)  # rows whose key is synced
        if matched == self._synced and key_sum - new_sum == synced_sum:
            return True, not found  # each synced key held once: none vanished
        for statement in diff_vanished_sql(query, key, schema, scope, plain_key=plain):
            conn.execute(statement.encode())
        vanished = int(
            conn.execute(
                f"SELECT count(*) FROM {self.keys_table} WHERE _rs_digest IS NULL"
            ).fetchone()[0]
        )
        return matched == self._synced - vanished, not found and not vanished

    def source_update(self) -> dict[str, Any]:
        """The source options the step reads instead of its own: the diff's rows, with the
        source's columns."""
        return {"query": diff_rows_query(self.schema, self.scope, [c for c, _ in self.columns])}

    def diff_keys(self) -> list[str]:
        """Every key the diff holds (new, changed, vanished, held more than once)."""
        rows = self._conn.execute(
            f"SELECT DISTINCT coalesce(_rs_key, _rs_old_key) FROM {self.diff_table}"
            " WHERE coalesce(_rs_key, _rs_old_key) IS NOT NULL"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def synced_keys(self) -> list[str]:
        """Every synced key of the scope (only when the snapshot and the table disagree)."""
        rows = self._conn.execute(
            f"SELECT key FROM {self.synced} WHERE scope = %s", (self.scope,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def unchanged_count(self) -> int:
        """How many synced keys the diff leaves out (rows found unchanged in the database)."""
        if self._synced is not None:  # counted in the diff's snapshot
            left = self._conn.execute(
                f"SELECT count(DISTINCT _rs_old_key) FROM {self.diff_table}"
            ).fetchone()
            return self._synced - int(left[0])
        row = self._conn.execute(
            f"SELECT (SELECT count(*) FROM {self.synced} WHERE scope = %s) - (SELECT"
            f" count(DISTINCT _rs_old_key) FROM {self.diff_table})",
            (self.scope,),
        ).fetchone()
        return int(row[0])

    def forget_sql(self) -> str:
        """The statement that takes the diff's keys (new, changed, vanished) out of the
        scope's synced rows (``%s``: the scope): a semi-join on the diff's keys, each synced
        row found by its index (a join on ``key = new OR key = old`` is a nested loop of
        every synced row against every row of the diff: hours at a 1% diff of 10M rows)."""
        return (
            f"DELETE FROM {self.synced} AS t WHERE t.scope = %s AND t.key IN ("
            f"SELECT _rs_key FROM {self.diff_table} WHERE _rs_key IS NOT NULL"
            f" UNION ALL SELECT _rs_old_key FROM {self.diff_table}"
            " WHERE _rs_old_key IS NOT NULL)"
        )

    def update(self, acked: Iterable[pa.Array]) -> int:
        """After the step's ledger is written: the diff's keys leave the synced rows, then
        the ``acked`` keys (rows that ended created, updated or unchanged) come back with
        their new digest; the diff goes. How many keys are synced now."""
        import psycopg

        conn = self._conn
        try:
            with conn.transaction():
                for statement in UPDATE_SETTINGS:
                    conn.execute(statement)
                gone = conn.execute(self.forget_sql(), (self.scope,)).rowcount
                conn.execute("CREATE TEMP TABLE rs_acked (key text) ON COMMIT DROP")
                with conn.cursor().copy("COPY rs_acked (key) FROM STDIN") as copy:
                    for keys in acked:  # COPY's text form, an array at a time
                        copy.write(copy_text(keys))
                back = conn.execute(
                    f"INSERT INTO {self.synced} (scope, key, digest) SELECT DISTINCT ON"
                    f" (d._rs_key) %s, d._rs_key, d._rs_digest FROM {self.diff_table} AS d"
                    " JOIN rs_acked AS a ON a.key = d._rs_key WHERE d._rs_n = 1"
                    " ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest",
                    (self.scope,),
                ).rowcount
                conn.execute(f"DROP TABLE IF EXISTS {self.diff_table}")
                if self._synced is not None:  # the diff's keys went, the acked came back
                    return self._synced - int(gone) + int(back)
                got = conn.execute(
                    f"SELECT count(*) FROM {self.synced} WHERE scope = %s", (self.scope,)
                ).fetchone()
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        return int(got[0])

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

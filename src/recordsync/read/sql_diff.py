"""The SQL text of change detection inside the database (``change_detection: database``) and
of a cursor's incremental read (``incremental``): pure text, run by :mod:`.pg_diff` and
:mod:`.sql` (docs/state.md, "Large tables").

**The row digest** covers a canonical text of the source columns the mapping reads, salted
with the step's fingerprint (the mapping config, the service's schema, the users, the owners
file, the recordsync version, and the query's column names and types). On PostgreSQL
(:func:`pg_digest_sql`) it is ``hash_record_extended`` (64 bits, seeded with the salt) of the
row of those columns' texts (each value's own text, in a session whose time zone is UTC,
hashed under the C collation; a null and an empty text differ); before PostgreSQL 14,
``hashtextextended`` of the row's text (``ROW(...)::text``: a null is an empty field, an
empty or special text is quoted). On DuckDB (:func:`digest_sql`) it is ``md5`` of each column as
``-`` when null, else its text's length, ``:`` and its text, joined with ``|``. Equal digests
mean equal cells in the mapped columns under an equal fingerprint, hence an equal batch
input (64 bits: a changed row keeps its digest with a chance of one in 2^64).

**The table of synced rows**, ``<schema>.synced``, holds ``(scope, key, digest)``: ``scope``
names the pipeline, its target and the mapping (:func:`scope_of`), ``key`` the row's key as
text. **The diff** is materialized in ``<schema>.diff_<scope>``: the source's rows with their
digest and key (``_rs_digest``, ``_rs_key``, ``_rs_n``: rows sharing the key) and the scope's
synced key (``_rs_old_key``), keeping the new rows (no synced key), the changed ones (another
digest), every row of a key the source holds more than once, and the vanished keys (a synced
key no row has: ``_rs_digest`` null). :func:`diff_table_sql` is one query (a full join and a
window over every row: DuckDB, and PostgreSQL's full passes). On PostgreSQL a diff pass takes
narrower ones, each of which the server may run in parallel workers: the keys and digests
alone are looked up in the synced rows (:func:`diff_keys_sql`: no sort, no row wider than a
key and a digest); a count with a checksum of the keys (:func:`diff_counts_sql`) tells
whether any synced key vanished or is held twice, and only then are the vanished keys sought
(:func:`diff_vanished_sql`); only the rows of the keys found are read again
(:func:`diff_rows_sql`; nothing is read when no key was found).
"""

from __future__ import annotations

from hashlib import blake2b

from recordsync.read.sql_text import quote_ident

SYNCED = "synced"
"""The table of synced rows in the state schema."""
ONE = "_rs_one"
"""The key column of one-row queries (the watermark's)."""


def scope_of(state_key: str, mapping: str) -> str:
    """A short, stable name of (pipeline and target, mapping) for the source database's
    tables: 16 hex digits of a BLAKE2b digest (no pipeline name is written there)."""
    return blake2b(f"{state_key}\x1f{mapping}".encode(), digest_size=8).hexdigest()


def literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def qualified(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


def create_synced(schema: str, catalog: str = "", digest: str = "uuid") -> list[str]:
    """The statements creating the state schema and its table of synced rows (idempotent);
    ``catalog``: the attached DuckDB database (``rs.``) they live in; ``digest``: the digest
    column's type (PostgreSQL: ``bigint``)."""
    return [
        f"CREATE SCHEMA IF NOT EXISTS {catalog}{quote_ident(schema)}",
        f"CREATE TABLE IF NOT EXISTS {catalog}{qualified(schema, SYNCED)} (scope text NOT NULL,"
        f" key text NOT NULL, digest {digest} NOT NULL, PRIMARY KEY (scope, key))",
    ]


_SPACES = "chr(32) || chr(9) || chr(10) || chr(13) || chr(11) || chr(12)"


PLAIN_KEY_TYPES = frozenset({"smallint", "integer", "bigint", "uuid"})
"""PostgreSQL types whose text is never blank nor padded: a key of one of them is its text."""


def key_text(key: str, *, duckdb: bool = False, plain: bool = False) -> str:
    """A row's key as the ledger spells it: the column's text, trimmed (blank: null);
    ``plain``: a key of one of :data:`PLAIN_KEY_TYPES`, its text as it is (the same text,
    without trimming every row's)."""
    if plain:
        return f"q.{quote_ident(key)}::text"
    trim = "trim" if duckdb else "btrim"
    return f"NULLIF({trim}(q.{quote_ident(key)}::text, {_SPACES}), '')"


def digest_sql(columns: list[str], salt: bytes) -> str:
    """The digest of a row of ``q`` over ``columns`` (see the module's docstring)."""
    parts = [literal(salt.hex())]
    for c in columns:
        col = f"q.{quote_ident(c)}"
        parts.append(
            f"CASE WHEN {col} IS NULL THEN '-' ELSE length({col}::text)::text || ':'"
            f" || {col}::text END"
        )
    return "md5(" + " || '|' || ".join(parts) + ")::uuid"


def pg_digest_sql(columns: list[str], salt: bytes, *, per_value: bool = True) -> str:
    """PostgreSQL's digest of a row of ``q`` over ``columns`` (a bigint; the module's
    docstring). ``per_value`` (PostgreSQL 14 and later): ``hash_record_extended`` of the row
    of the values' texts, each hashed apart under the C collation (a null and an empty text
    differ), about half the work of ``hashtextextended`` of the whole row's text (before 14)."""
    seed = int.from_bytes(blake2b(salt, digest_size=8).digest(), "big", signed=True)
    if per_value:
        texts = ", ".join(f'q.{quote_ident(c)}::text COLLATE "C"' for c in columns)
        return f"hash_record_extended(ROW({texts}), {seed})"
    row = ", ".join(f"q.{quote_ident(c)}" for c in columns)
    return f"hashtextextended(ROW({row})::text, {seed})"


def diff_table_sql(
    query: str,
    key: str,
    columns: list[str],
    salt: bytes,
    schema: str,
    scope: str,
    catalog: str = "",
    digest: str | None = None,
    *,
    plain_key: bool = False,
) -> str:
    """``CREATE UNLOGGED TABLE <schema>.diff_<scope> AS ...``: the one query of the diff
    (``catalog``: DuckDB's attached state database, ``rs.``; a plain table there;
    ``digest``: the row digest's expression, :func:`digest_sql` when None; ``plain_key``:
    :func:`key_text`)."""
    body = query.strip().rstrip(";")
    digest = digest or digest_sql(columns, salt)
    synced = catalog + qualified(schema, SYNCED)
    duck = bool(catalog)
    kt = key_text(key, duckdb=duck, plain=plain_key)
    create = "CREATE TABLE" if duck else "CREATE UNLOGGED TABLE"
    return (
        f"{create} {catalog}{qualified(schema, 'diff_' + scope)} AS\n"
        f"SELECT s.*, t.key AS _rs_old_key FROM (\n"
        f"  SELECT q.*, {digest} AS _rs_digest,"
        f" {kt} AS _rs_key,"
        f" count(*) OVER (PARTITION BY {kt}) AS _rs_n\n"
        f"  FROM (\n{body}\n) AS q\n"
        f") AS s FULL JOIN (SELECT key, digest FROM {synced} WHERE scope = {literal(scope)})"
        " AS t ON t.key = s._rs_key\n"
        "WHERE s._rs_key IS NULL OR t.key IS NULL OR t.digest <> s._rs_digest OR s._rs_n > 1"
    )


def diff_keys_sql(
    query: str, key: str, digest: str, schema: str, scope: str, *, plain_key: bool = False
) -> str:
    """PostgreSQL's first query of a diff pass: ``<schema>.keys_<scope>``, the keys and
    digests of the new and changed rows and of the rows without a key (``_rs_key``,
    ``_rs_digest``; ``_rs_old_key``: the synced key, null for a new row). Every row of the
    query is digested, and only its key and digest are looked up in the synced rows (a left
    join: PostgreSQL runs it in parallel workers, where a full join runs in one backend); no
    row wider than that is sorted. The vanished keys are not found here
    (:func:`diff_counts_sql` tells whether there are any, :func:`diff_vanished_sql` finds
    them); nor are keys the source holds more than once."""
    body = query.strip().rstrip(";")
    kt = key_text(key, plain=plain_key)
    return (
        f"CREATE UNLOGGED TABLE {qualified(schema, 'keys_' + scope)} AS\n"
        "SELECT s._rs_key, s._rs_digest, t.key AS _rs_old_key FROM (\n"
        f"  SELECT {kt} AS _rs_key, {digest} AS _rs_digest FROM (\n{body}\n) AS q\n"
        f") AS s LEFT JOIN (SELECT key, digest FROM {qualified(schema, SYNCED)}"
        f" WHERE scope = {literal(scope)}) AS t ON t.key = s._rs_key\n"
        "WHERE t.key IS NULL OR t.digest <> s._rs_digest"
    )


_KEY_SEED = 8_117_394_021_568_313_377
"""The seed of the keys' hashes summed by :func:`diff_counts_sql`."""


def _key_hash(text: str) -> str:
    return f'hashtextextended({text} COLLATE "C", {_KEY_SEED})'


def diff_counts_sql(
    query: str, key: str, schema: str, scope: str, *, plain_key: bool = False
) -> str:
    """One row after :func:`diff_keys_sql`: the query's rows with a key and the sum of their
    keys' 64-bit hashes; the scope's synced keys and their sum; the rows of the keys table;
    the new rows with a key and their sum. The rows whose key is synced (the first count less
    the last) hold every synced key once exactly when they are as many as the synced keys
    and their sums are equal (else a sum differs but with a chance of one in 2^64): then no
    key vanished and none is held twice. One pass over the query, with no join."""
    body = query.strip().rstrip(";")
    keys = qualified(schema, "keys_" + scope)
    kt = key_text(key, plain=plain_key)
    new = "WHERE _rs_old_key IS NULL AND _rs_key IS NOT NULL"
    return (
        f"SELECT s.n, s.h, t.n, t.h, (SELECT count(*) FROM {keys}), k.n, k.h FROM\n"
        f"  (SELECT count(k) AS n, coalesce(sum({_key_hash('k')}), 0) AS h FROM"
        f" (SELECT {kt} AS k FROM (\n{body}\n) AS q) AS q) AS s,\n"
        f"  (SELECT count(*) AS n, coalesce(sum({_key_hash('key')}), 0) AS h FROM"
        f" {qualified(schema, SYNCED)} WHERE scope = {literal(scope)}) AS t,\n"
        f"  (SELECT count(*) AS n, coalesce(sum({_key_hash('_rs_key')}), 0) AS h FROM {keys}"
        f" {new}) AS k"
    )


def diff_vanished_sql(
    query: str, key: str, schema: str, scope: str, *, plain_key: bool = False
) -> list[str]:
    """When :func:`diff_counts_sql` finds the synced keys not held once each: the vanished
    keys (a synced key no row has) added to ``<schema>.keys_<scope>`` (``_rs_digest`` null),
    found by an anti-join made as a table first (PostgreSQL runs it in parallel workers,
    where it would not run an ``INSERT``'s query), by hashing: the planner, knowing nothing
    of the keys' texts, would sort every row of the query instead (several times slower)."""
    body = query.strip().rstrip(";")
    kt = key_text(key, plain=plain_key)
    gone = qualified(schema, "vanished_" + scope)
    return [
        f"DROP TABLE IF EXISTS {gone}",
        "SET LOCAL enable_mergejoin = off",
        f"CREATE UNLOGGED TABLE {gone} AS SELECT t.key FROM {qualified(schema, SYNCED)} AS t"
        f" WHERE t.scope = {literal(scope)} AND NOT EXISTS (SELECT FROM (\n{body}\n) AS q"
        f" WHERE {kt} = t.key)",
        "SET LOCAL enable_mergejoin TO DEFAULT",
        f"INSERT INTO {qualified(schema, 'keys_' + scope)} (_rs_old_key) SELECT key FROM {gone}",
        f"DROP TABLE {gone}",
    ]


def diff_rows_sql(
    query: str,
    key: str,
    digest: str,
    schema: str,
    scope: str,
    *,
    plain_key: bool = False,
    empty: bool = False,
) -> list[str]:
    """PostgreSQL's second step of a diff pass: ``<schema>.diff_<scope>`` (the shape of
    :func:`diff_table_sql`'s) from the rows whose key :func:`diff_keys_sql` found (and the
    rows without a key), digested again as read, then the vanished keys; ``empty``: the keys
    table is empty (nothing changed), the diff is made empty without reading the query."""
    body = query.strip().rstrip(";")
    kt = key_text(key, plain=plain_key)
    keys = qualified(schema, "keys_" + scope)
    diff = qualified(schema, "diff_" + scope)
    create = (
        f"CREATE UNLOGGED TABLE {diff} AS\n"
        "SELECT s.*, o._rs_old_key FROM (\n"
        f"  SELECT q.*, {digest} AS _rs_digest, {kt} AS _rs_key,"
        f" count(*) OVER (PARTITION BY {kt}) AS _rs_n\n"
        f"  FROM (\n{body}\n) AS q\n"
        f"  WHERE {kt} IS NULL OR {kt} IN (SELECT _rs_key FROM {keys})\n"
        f") AS s LEFT JOIN (SELECT DISTINCT _rs_old_key FROM {keys}"
        " WHERE _rs_old_key IS NOT NULL) AS o ON o._rs_old_key = s._rs_key"
    )
    if empty:
        return [create + "\nWITH NO DATA"]
    return [
        create,
        f"INSERT INTO {diff} (_rs_old_key) SELECT _rs_old_key FROM {keys}"
        " WHERE _rs_digest IS NULL",
    ]


def diff_rows_query(schema: str, scope: str, columns: list[str]) -> str:
    """The query a step reads instead of its own: the diff's rows (new, changed, keys held
    more than once), the source's ``columns`` only."""
    cols = ", ".join(quote_ident(c) for c in columns)
    return f"SELECT {cols} FROM {qualified(schema, 'diff_' + scope)} WHERE _rs_digest IS NOT NULL"


def since_query(query: str, cursor: str, since: str) -> str:
    """``query`` narrowed to the rows whose ``cursor`` is at least ``since`` (an SQL
    expression: :func:`watermark_sql`)."""
    body = query.strip().rstrip(";")
    return f"SELECT * FROM (\n{body}\n) AS w WHERE w.{quote_ident(cursor)} >= {since}"


def keys_sql(column: str, keys: list[str], *, duckdb: bool = False) -> str:
    """``OR <column's trimmed text> IN (keys)``: rows of ``w`` read again by key."""
    trim = "trim" if duckdb else "btrim"
    listed = ", ".join(literal(k) for k in keys)
    return f" OR {trim}(w.{quote_ident(column)}::text, {_SPACES}) IN ({listed})"


def max_query(query: str, cursor: str) -> str:
    """One row: the largest ``cursor`` of ``query`` (``_rs_wm``), keyed by :data:`ONE`."""
    body = query.strip().rstrip(";")
    return f"SELECT max(w.{quote_ident(cursor)}) AS _rs_wm, 1 AS {ONE} FROM (\n{body}\n) AS w"


def watermark_sql(kind: str, value: str, lookback: int) -> str:
    """The SQL value ``lookback`` before the watermark ``value`` of type ``kind``
    (``timestamp``, ``timestamptz``, ``date``, ``int`` or ``float``)."""
    if kind in ("int", "float"):
        number = float(value) if kind == "float" else int(value)
        return repr(number - lookback)
    typ = {"timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMPTZ", "date": "TIMESTAMP"}[kind]
    return f"(CAST({literal(value)} AS {typ}) - INTERVAL '{int(lookback)} seconds')"

"""A query source read from its cursor (``source: {incremental: {cursor: updated_at,
lookback: 15m, full_check_every: 7d}}``, docs/state.md "Large tables").

Per pipeline, target and mapping the state keeps a **watermark**: the largest cursor value
of the query when the last complete step began (in ``target_marks``, under the state key and
``cursor`` + U+001F + the step's name), and when the source was last read whole. A step is

- an **incremental pass**: only rows whose cursor is at least the watermark less
  ``lookback`` are read (rows committed late with an older cursor are read again within the
  look-back; rows read twice are found unchanged by the ledger), with the rows whose last
  send failed or was in doubt (by key); mirror deletes do not run (the source's other keys
  are not read);
- a **full check**, reading every row as without ``incremental`` (mirror deletes run), when
  there is no watermark, ``full_check_every`` has passed since the last one, the step's
  fingerprint changed (the mapping, the service's schema or users, the owners file), the
  ledger of the step is empty (a first run, or after ``state reset``), ``--full-refresh``
  is given, the target's records were edited or deleted since the last run, or more than
  :data:`MAX_RETRY_KEYS` rows wait to be sent again.

The watermark moves only when the step completes (every row reported and acknowledged).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import date, datetime, timedelta
from hashlib import blake2b
from pathlib import Path
from typing import Any

from recordsync.config.incremental import Incremental
from recordsync.config.models import MappingConfig
from recordsync.core.errors import SourceError
from recordsync.read.sql import iter_sql
from recordsync.read.sql_diff import ONE, keys_sql, max_query, since_query, watermark_sql
from recordsync.state.ledger_rows import status_sql
from recordsync.state.store import StateStore

log = logging.getLogger(__name__)

MAX_RETRY_KEYS = 1000
"""Rows to send again (failed or in doubt) beyond which a step reads the whole source."""


def mark_name(step: str) -> str:
    """The ``target_marks.object_type`` of a step's watermark (never an object type's)."""
    return f"cursor\x1f{step}"


def _typed(value: Any) -> tuple[str, str] | None:
    """A cursor value as (kind, text); None when the query has no rows."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return ("timestamptz" if value.tzinfo is not None else "timestamp", value.isoformat())
    if isinstance(value, date):
        return "date", value.isoformat()
    if isinstance(value, bool):
        raise TypeError("a boolean")
    if isinstance(value, int):
        return "int", str(value)
    if isinstance(value, float):
        return "float", repr(value)
    if isinstance(value, str):
        try:
            return (
                ("int", str(int(value)))
                if value.strip().lstrip("-").isdigit()
                else (
                    "float",
                    repr(float(value)),
                )
            )
        except ValueError:
            raise TypeError("text") from None
    raise TypeError(type(value).__name__)


class CursorWindow:
    """One step's cursor: :meth:`decide` (full check or incremental pass), the mapping to
    read, and :meth:`save` when the step completes."""

    def __init__(
        self,
        store: StateStore,
        state_key: str,
        step: str,
        config: MappingConfig,
        base_dir: Path,
        made: bytes,
    ) -> None:
        """``made``: what the rows' inputs depend on besides their cells (the step's
        fingerprint): when it changes, the step reads every row once."""
        assert config.source.incremental is not None
        self.made = blake2b(made, digest_size=16).hexdigest()
        self.store, self.state_key, self.step = store, state_key, step
        self.config = config
        self.spec: Incremental = config.source.incremental
        self.base_dir = base_dir
        self.full = True
        self.reason = ""
        """Why this step reads the whole source (empty for an incremental pass)."""
        self.since = ""
        """The incremental pass's lower bound, as said to the user."""
        self._candidate: tuple[str, str] | None = None
        self._full_at: float | None = None

    def _load(self) -> dict[str, Any] | None:
        row = self.store.connection.execute(
            "SELECT mark FROM target_marks WHERE scope = ? AND object_type = ?",
            (self.state_key, mark_name(self.step)),
        ).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            got = json.loads(str(row[0]))
        except ValueError:
            return None
        return got if isinstance(got, dict) else None

    def _max(self) -> tuple[str, str] | None:
        src = self.config.source
        assert src.query is not None
        probe = src.model_copy(
            update={"query": max_query(src.query, self.spec.cursor), "key": [ONE]}
        )
        value = None
        for sb in iter_sql(probe, self.base_dir):
            value = sb.batch.column(0)[0].as_py()
        try:
            return _typed(value)
        except TypeError as exc:
            raise SourceError(
                f"{src.label}: incremental.cursor {self.spec.cursor!r} holds {exc}: a cursor"
                " is a timestamp, a date or a number that grows with every change of a row",
                key="source.incremental.cursor",
                hint="name a column such as updated_at, or leave incremental out",
            ) from None

    def _retry_keys(self) -> list[str] | None:
        """The keys whose last send failed or was in doubt; None when too many."""
        scope = self.store.scope_id(self.state_key, self.step, create=False)
        if scope is None:
            return []
        rows = self.store.connection.execute(
            "SELECT source_key FROM ledger WHERE scope_id = ? AND last_status IN"
            f" ({status_sql('failed', 'in_doubt')}) LIMIT ?",
            (scope, MAX_RETRY_KEYS + 1),
        ).fetchall()
        return None if len(rows) > MAX_RETRY_KEYS else [str(r[0]) for r in rows]

    def _ledger_empty(self) -> bool:
        scope = self.store.scope_id(self.state_key, self.step, create=False)
        if scope is None:
            return True
        row = self.store.connection.execute(
            "SELECT 1 FROM ledger WHERE scope_id = ? LIMIT 1", (scope,)
        ).fetchone()
        return row is None

    def decide(self, *, force_full: str | None = None) -> MappingConfig | None:
        """The mapping to read this step (the query narrowed to the window), or None for a
        full check (read as without ``incremental``). ``force_full``: why the whole source
        must be read anyway."""
        self._candidate = self._max()
        last = self._load()
        now = time.time()
        keys = self._retry_keys()
        full_at = float(last.get("full_at") or 0) if last else 0.0
        self._full_at = full_at or None
        if force_full:
            self.reason = force_full
        elif last is None or last.get("value") is None:
            self.reason = "no watermark yet"
        elif self._ledger_empty():
            self.reason = "the step's ledger is empty"
        elif last.get("made") != self.made:
            self.reason = "the mapping, the service's schema or its users changed"
        elif now - full_at >= self.spec.full_check_every:
            self.reason = "its full check is due (incremental.full_check_every)"
        elif keys is None:
            self.reason = f"more than {MAX_RETRY_KEYS} rows wait to be sent again"
        elif self._candidate is not None and last.get("kind") != self._candidate[0]:
            self.reason = "the cursor column's type changed"
        else:
            self.reason = ""
        self.full = bool(self.reason)
        if self.full:
            return None
        assert last is not None and keys is not None
        src = self.config.source
        assert src.query is not None
        since = watermark_sql(str(last["kind"]), str(last["value"]), self.spec.lookback)
        self.since = f"{last['value']} less {timedelta(seconds=self.spec.lookback)}"
        query = since_query(src.query, self.spec.cursor, since)
        lk = self.config.ledger_key
        if keys:  # rows to send again, by key
            if lk is None or lk.normalize != "none":
                self.full, self.reason = True, "rows wait to be sent again"
                return None
            query += keys_sql(lk.column, keys, duckdb=src.engine == "duckdb")
        narrowed = src.model_copy(update={"query": query, "incremental": None})
        return self.config.model_copy(update={"source": narrowed})

    def save(self, run_id: str) -> None:
        """The step completed: its watermark moves to the cursor's largest value when it
        began (and a full check is remembered as the last one)."""
        if self._candidate is None:
            return
        kind, value = self._candidate
        full_at = time.time() if self.full else self._full_at
        mark = json.dumps({"kind": kind, "value": value, "full_at": full_at, "made": self.made})
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM target_marks WHERE scope = ? AND object_type = ?",
                (self.state_key, mark_name(self.step)),
            )
            conn.execute(
                "INSERT INTO target_marks (scope, object_type, mark, total, run_id,"
                " checked_at) VALUES (?, ?, ?, NULL, ?, ?)",
                (self.state_key, mark_name(self.step), mark, run_id, _utc(time.time())),
            )

    def step_done(self, run_id: str, mirror: bool) -> str | None:
        """The step completed: :meth:`save`; with mirror deletes on (``mirror``), after an
        incremental pass, the note saying why they did not run and when they will."""
        self.save(run_id)
        if self.full or not mirror:
            return None
        note = (
            f"step {self.step}: incremental pass (rows with {self.spec.cursor} from"
            f" {self.since}): mirror deletes need every key of the source and did not"
            f" run; they run on the next full check (due {self.next_full_check()},"
            " or with --full-refresh)"
        )
        log.info("%s", note)
        return note

    def next_full_check(self) -> str:
        """When the next full check is due (UTC), as said to the user."""
        return _utc((self._full_at or time.time()) + self.spec.full_check_every)


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))

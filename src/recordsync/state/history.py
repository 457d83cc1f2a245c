"""Run history: one record a run in the ``run_history`` table (state schema version 5).

A record holds what a run did (its pipeline, the target it wrote to, when it started and
ended, its counts per step and in total, its exit code, its report's directory), the health
conditions it raised (failed, rows not ok, a volume drop, a slow run) and the alert
conditions standing after it (``alerted``: what the last message sent said, so that a message
goes out once per change of state, and one "resolved" when the run is healthy again).

Reading a source key's history (:meth:`RunHistory.key_events`) costs nothing per row beyond
the ledger and the journal: the key's last outcome (the run, its status, the record id; a
mirror delete too) is read from its ledger row, and the outcomes the ledger cannot tell (a
failure or a hold with its reason, an outcome a later one of the same run replaced: what a
finished run keeps of its journal, :mod:`recordsync.state.kept_outcomes`) from the
per-chunk outcomes (``chunk_log``) until the retention prunes them (:meth:`RunHistory.prune`).
A successful send that a later run's outcome replaced in the ledger is not kept.

The retention never removes the ledger, snapshots, the marks of the target, a run still
``running`` (a resume needs its journal) or the newest record of a pipeline and target (the
alert state the next run compares with).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from recordsync.state.journal_codec import PACKED, decode
from recordsync.state.ledger_rows import ACKED_SENT, DELETED, STATUS_NAMES, epoch_text
from recordsync.state.store import StateStore

DEFAULT_RETENTION_DAYS = 90
BASELINE_RUNS = 3
"""How many of the last healthy runs a step's volume is compared with (their median)."""
_LOOK_BACK = 50
"""Records read to find those healthy runs (runs that tripped a guard are skipped)."""

_COLUMNS = (
    "run_id, pipeline, state_key, target, started_at, finished_at, exit_code, report_dir,"
    " whole_run, steps, totals, conditions, alerted"
)


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One run as the history keeps it."""

    run_id: str
    pipeline: str
    """The pipeline's name (as ``recordsync run`` names it)."""
    state_key: str
    """The pipeline's state key (its name and its target: :mod:`recordsync.state.targets`)."""
    target: str | None
    started_at: str
    finished_at: str | None
    exit_code: int
    report_dir: str | None
    whole_run: bool
    """A run of the whole pipeline (not a retry, not a dry run): its volumes are a baseline."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Per step: ``step``, ``mapping``, ``object_type``, the counts, ``aborted``, ``guarded``."""
    totals: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    """The health conditions this run raised: ``{id, reason}`` each."""
    alerted: list[str] = field(default_factory=list)
    """The ids of the conditions standing (alerted) after this run."""

    @property
    def healthy(self) -> bool:
        return not self.conditions

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "pipeline": self.pipeline,
            "target": self.target,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "exit_code": self.exit_code,
            "report_dir": self.report_dir,
            "whole_run": self.whole_run,
            "steps": self.steps,
            "totals": self.totals,
            "conditions": self.conditions,
            "alerted": self.alerted,
        }


@dataclass(frozen=True, slots=True)
class KeyEvent:
    """What one run did to one source key."""

    run_id: str
    started_at: str
    step: str
    key: str
    """The ledger key as the state keeps it."""
    source_row: int | None
    status: str
    """``created``, ``updated``, ``failed``, ``in_doubt`` or ``deleted``."""
    record_id: int | None
    error: str | None


def _record(row: tuple[Any, ...]) -> HistoryRecord:
    return HistoryRecord(
        run_id=str(row[0]),
        pipeline=str(row[1]),
        state_key=str(row[2]),
        target=row[3],
        started_at=str(row[4]),
        finished_at=row[5],
        exit_code=int(row[6]),
        report_dir=row[7],
        whole_run=bool(row[8]),
        steps=json.loads(row[9]),
        totals=json.loads(row[10]),
        conditions=json.loads(row[11]),
        alerted=json.loads(row[12]),
    )


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matching it anywhere (``\\`` escapes)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class RunHistory:
    """The ``run_history`` table of a state store, and what the journal keeps of finished
    runs (a source key's outcomes)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    # -- writes ----------------------------------------------------------------------
    def record(self, rec: HistoryRecord) -> None:
        """Keep ``rec`` (a resumed run's record replaces its earlier attempt's); records are
        ordered as they are kept (runs can start within one second)."""
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM run_history WHERE run_id = ?", (rec.run_id,))
            seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM run_history").fetchone()[0])
            conn.execute(
                f"INSERT INTO run_history ({_COLUMNS}, seq) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.run_id,
                    rec.pipeline,
                    rec.state_key,
                    rec.target,
                    rec.started_at,
                    rec.finished_at,
                    rec.exit_code,
                    rec.report_dir,
                    int(rec.whole_run),
                    json.dumps(rec.steps, ensure_ascii=False),
                    json.dumps(rec.totals, ensure_ascii=False),
                    json.dumps(rec.conditions, ensure_ascii=False),
                    json.dumps(rec.alerted, ensure_ascii=False),
                    seq + 1,
                ),
            )

    def prune(self, state_key: str, older_than: str) -> int:
        """Remove the history records, and the kept journal of finished runs, of
        ``state_key`` that started before ``older_than`` (an ISO UTC time), except the
        newest record; the number of history records removed. Never the ledger, snapshots,
        target marks, or a run still ``running``."""
        conn = self.store.connection
        newest = self.last(state_key)
        keep = newest.run_id if newest is not None else ""
        with self.store.transaction():
            old_runs = [
                str(r[0])
                for r in conn.execute(
                    "SELECT run_id FROM runs WHERE pipeline = ? AND state <> 'running'"
                    " AND started_at < ? AND run_id <> ?",
                    (state_key, older_than, keep),
                ).fetchall()
            ]
            for run_id in old_runs:
                conn.execute("DELETE FROM chunk_log WHERE run_id = ?", (run_id,))
                conn.execute("DELETE FROM chunks WHERE run_id = ?", (run_id,))
                conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
            cur = conn.execute(
                "DELETE FROM run_history WHERE state_key = ? AND started_at < ? AND run_id <> ?",
                (state_key, older_than, keep),
            )
            return max(0, cur.rowcount)

    # -- reads -----------------------------------------------------------------------
    def last(self, state_key: str) -> HistoryRecord | None:
        """The newest record of a pipeline and target (the alert state it left)."""
        row = self.store.connection.execute(
            f"SELECT {_COLUMNS} FROM run_history WHERE state_key = ? ORDER BY seq DESC LIMIT 1",
            (state_key,),
        ).fetchone()
        return None if row is None else _record(row)

    def last_key_for(self, pipeline: str, target: str | None) -> str | None:
        """The state key of the newest record of ``pipeline`` (its name) into ``target``
        (its name): for a run stopped before its target could be identified."""
        row = self.store.connection.execute(
            "SELECT state_key FROM run_history WHERE pipeline = ? AND target = ?"
            " ORDER BY seq DESC LIMIT 1",
            (pipeline, target),
        ).fetchone()
        return None if row is None else str(row[0])

    def runs(
        self, pipeline: str | None = None, *, since: str | None = None, limit: int | None = None
    ) -> list[HistoryRecord]:
        """Records, newest first: of ``pipeline`` (its name) or of every pipeline, started at
        or after ``since`` (an ISO UTC time), at most ``limit``."""
        sql = f"SELECT {_COLUMNS} FROM run_history WHERE 1 = 1"
        params: list[Any] = []
        if pipeline is not None:
            sql += " AND pipeline = ?"
            params.append(pipeline)
        if since is not None:
            sql += " AND started_at >= ?"
            params.append(since)
        sql += " ORDER BY started_at DESC, seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_record(r) for r in self.store.connection.execute(sql, params).fetchall()]

    def pipelines(self) -> list[str]:
        rows = self.store.connection.execute("SELECT DISTINCT pipeline FROM run_history")
        return sorted(str(r[0]) for r in rows)

    def baseline(self, state_key: str, step: str, mapping: str) -> list[int]:
        """The rows read by ``step`` (with ``mapping``) in the last :data:`BASELINE_RUNS`
        healthy-volume runs of the pipeline and target, newest first: whole runs that were not
        stopped, in which the step read its whole source (not an incremental pass), ran to its
        end and no volume guard tripped on it."""
        rows = self.store.connection.execute(
            f"SELECT {_COLUMNS} FROM run_history WHERE state_key = ? AND whole_run = 1"
            " ORDER BY seq DESC LIMIT ?",
            (state_key, _LOOK_BACK),
        ).fetchall()
        found: list[int] = []
        for rec in map(_record, rows):
            if rec.exit_code not in (0, 1):
                continue
            for s in rec.steps:
                if s.get("step") != step or s.get("mapping") != mapping:
                    continue
                if s.get("aborted") or s.get("guarded") or s.get("partial"):
                    break
                found.append(int(s.get("rows_read", 0)))
                break
            if len(found) >= BASELINE_RUNS:
                break
        return found

    def key_events(self, pipeline: str, key: str) -> list[KeyEvent]:
        """What the runs of ``pipeline`` (its name) did to the source key ``key``, oldest
        first: its last outcome (created, updated, failed, held in doubt or deleted), read from
        the ledger, and the outcomes the kept runs (within the retention) journaled that the
        ledger cannot tell (failures and holds with their reasons; module docstring). ``key``
        is a ledger key as the state keeps it (``email:ann@x.io``, or a declared
        ``ledger_key``'s value) or the value after its rule (``ann@x.io``). An outcome of the
        ledger that a kept run journaled is given once, as journaled (with its source row)."""
        conn = self.store.connection
        rows = conn.execute(
            "SELECT run_id, started_at, state_key, seq FROM run_history WHERE pipeline = ?",
            (pipeline,),
        ).fetchall()
        started = {str(r[0]): (str(r[1]), str(r[2])) for r in rows}
        order = {str(r[0]): int(r[3]) for r in rows}  # runs in the order they were kept
        state_keys = sorted({k for _, k in started.values()})
        events: list[KeyEvent] = []
        inner = {json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]}
        patterns = sorted({_like(f'{q}{text}"') for text in inner for q in ('"', ":")})
        for run_id, (when, _) in started.items():
            for pattern in patterns:
                cur = conn.execute(
                    "SELECT step, outcomes FROM chunk_log WHERE run_id = ?"
                    " AND outcomes IS NOT NULL AND outcomes LIKE ? ESCAPE '\\'",
                    (run_id, pattern),
                )
                events.extend(_events_of(run_id, when, cur.fetchall(), key))
            # a compressed chunk (journal_codec) cannot be searched in SQL: read in Python
            cur = conn.execute(
                "SELECT step, outcomes FROM chunk_log WHERE run_id = ?"
                " AND outcomes IS NOT NULL AND outcomes LIKE ?",
                (run_id, PACKED + "%"),
            )
            events.extend(_events_of(run_id, when, cur.fetchall(), key))
        journaled = {(e.run_id, e.key, e.status) for e in events}
        for sk in state_keys:
            for source_key, mapping, rid, run_id, updated_at, code in conn.execute(
                "SELECT l.source_key, s.mapping, l.record_id, r.run_id, r.at,"
                " l.last_status FROM ledger l JOIN scopes s ON s.scope_id = l.scope_id"
                " LEFT JOIN run_numbers r ON r.run_no = l.last_run WHERE s.pipeline = ?"
                " AND (l.source_key = ? OR l.source_key LIKE ? ESCAPE '\\')",
                (sk, key, _like(f":{key}")[:-1]),  # the key, or its value after the rule
            ).fetchall():
                if not _same_key(str(source_key), key):
                    continue
                run = str(run_id) if run_id is not None else ""
                status = STATUS_NAMES[int(code)]
                if (run, str(source_key), status) in journaled:  # kept with its row: shown
                    continue
                when = started.get(run, (epoch_text(updated_at), ""))[0]
                record_id = rid if status in (*ACKED_SENT, DELETED) else None
                events.append(
                    KeyEvent(
                        run, when, str(mapping), str(source_key), None, status, record_id, None
                    )
                )
        unique = {(e.run_id, e.step, e.key, e.source_row, e.status): e for e in events}
        # two runs may start within the same second: the order they were kept in decides;
        # the ledger's outcome is a run's last (and one by a run no longer kept comes last)
        last = max(order.values(), default=0) + 1
        return sorted(
            unique.values(),
            key=lambda e: (
                order.get(e.run_id, last),
                e.started_at,
                e.source_row is None,
                e.step,
                e.source_row or 0,
            ),
        )


def _same_key(stored: str, asked: str) -> bool:
    """``asked`` names the ledger key ``stored``: the key itself, or its value after the
    rule (``ann@x.io`` for ``email:ann@x.io``)."""
    return stored == asked or stored.partition(":")[2] == asked


def _events_of(
    run_id: str, started_at: str, chunks: Iterable[tuple[Any, ...]], key: str
) -> Iterator[KeyEvent]:
    for step, text in chunks:
        for source_row, k, _hash, status, rid, error in decode(text):
            if k is not None and status != "retry" and _same_key(k, key):
                yield KeyEvent(run_id, started_at, str(step), k, source_row, status, rid, error)


def median_of(counts: list[int]) -> int:
    """The baseline a step's rows are compared with (the median of the healthy runs)."""
    return int(median(counts))

"""The call order the runner follows (docs/state.md), end to end against a toy service:
a run dies with a chunk in flight; the resumed run accounts every source row exactly once."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.core.model import MAX_BATCH, PreparedRow, RowStatus
from recordsync.state import (
    ChangeDetector,
    ChunkResult,
    Journal,
    JournalRow,
    PipelineLock,
    StateStore,
)

from .conftest import prepared


class Killed(Exception):
    """Stands in for kill -9 between begin_chunk and ack_chunk."""


@dataclass
class ToyService:
    """Upserts by match_value; ids from 1. Records every entry it receives."""

    records: dict[Any, int] = field(default_factory=dict)
    received: list[Any] = field(default_factory=list)
    created: Counter[str] = field(default_factory=Counter)
    """Creations per entry name: above 1 is a duplicate record."""

    def batch(self, objects: list[dict[str, Any]]) -> list[tuple[str, int | None, str | None]]:
        out: list[tuple[str, int | None, str | None]] = []
        for obj in objects:
            self.received.append(obj.get("match_value"))
            if obj["fields"].get("email", "").startswith("bad"):
                out.append(("failed", None, "Validation failed: email: invalid email format"))
                continue
            if "match_by" not in obj:  # like a custom object: always a new record
                self.created[obj["name"]] += 1
                self.records[("new", len(self.records))] = len(self.records) + 1
                out.append(("created", len(self.records), None))
                continue
            key = obj.get("match_value")
            if obj.get("match_by") == "id":
                key = next(k for k, v in self.records.items() if v == key)
            if key in self.records:
                out.append(("updated", self.records[key], None))
            else:
                self.records[key] = len(self.records) + 1
                self.created[obj["name"]] += 1
                out.append(("created", self.records[key], None))
        return out


def run(
    store: StateStore,
    state_dir: Any,
    source: list[PreparedRow],
    service: ToyService,
    *,
    die_in_chunk: int | None = None,
    new_run_id: str = "run-A",
) -> dict[int, str]:
    """Returns {source_row: final status} for the report. (``state_dir``: where the lock
    file goes on SQLite.)"""
    lock = store.pipeline_lock("nightly") if store.is_postgres else None
    with lock or PipelineLock(state_dir, "nightly"):
        journal = Journal(store, "nightly")
        info, resumed = journal.resume_or_start(new_run_id)
        run_id, step = info.run_id, "contacts"
        if resumed:
            journal.settle_in_flight(run_id)
        done = journal.journaled_rows(run_id, step) if resumed else None
        if resumed:
            journal.restart_marks(run_id, step)
        detector = ChangeDetector(
            store, "nightly", "contacts", match_by_ledger_id=True, journaled=done
        )
        report: dict[int, str] = {}
        chunk_no = journal.next_chunk_no(run_id, step)
        for start in range(0, len(source), 1000):
            cls = detector.classify(source[start : start + 1000])
            for row, o in zip(cls.done, cls.outcomes, strict=True):
                report[row.source.source_row] = o.status
            for u in cls.unchanged:
                report[u.row.source.source_row] = "unchanged"
            for row in cls.skipped:
                report[row.source.source_row] = row.status.value
            for i in range(0, len(cls.to_send), MAX_BATCH):
                part = cls.to_send[i : i + MAX_BATCH]
                rows = [
                    JournalRow(
                        t.row.source.source_row, t.row.key, t.input_hash, "match_by" in t.payload
                    )
                    for t in part
                ]
                journal.begin_chunk(run_id, step, chunk_no, rows[0].source_row, rows)
                answers = service.batch([t.payload for t in part])
                if chunk_no == die_in_chunk:
                    raise Killed
                journal.ack_chunk(
                    run_id,
                    step,
                    chunk_no,
                    [
                        ChunkResult(r.source_row, s, rid, err)
                        for r, (s, rid, err) in zip(rows, answers, strict=True)
                    ],
                )
                report.update((r.source_row, a[0]) for r, a in zip(rows, answers, strict=True))
                chunk_no += 1
        journal.finish_run(run_id)
        return report


def source(n: int, changed: set[int] = frozenset()) -> list[PreparedRow]:  # type: ignore[assignment]
    rows = [prepared(i, f"k{i}", {"lead_score": 1 if i in changed else 0}) for i in range(2, n + 2)]
    rows[10] = prepared(12, "bad12", {"email": "bad"})  # fails at the service
    rows[11] = prepared(13, "k13", status=RowStatus.INVALID)
    return rows


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    """The state store in an SQLite file, or in a real PostgreSQL (tests/pg_support.py)."""
    if request.param == "sqlite":
        with StateStore(tmp_path / ".recordsync" / "state.db") as s:
            yield s
    else:
        with StateStore(request.getfixturevalue("pg_url")) as s:
            yield s


def test_kill_mid_run_then_resume_accounts_every_row_once(
    any_store: StateStore, tmp_path: Any
) -> None:
    store = any_store
    service = ToyService()
    src = source(450)
    with pytest.raises(Killed):
        run(store, tmp_path, src, service, die_in_chunk=3)
    assert len(service.received) == 300  # chunks 1, 2 acked; chunk 3 sent, never acked
    report = run(store, tmp_path, src, service, new_run_id="run-B")
    assert sorted(report) == [r.source.source_row for r in src]  # every row, once
    # chunk 3 reached the service before the kill: resent (safe, matched), now "updated"
    assert Counter(report.values()) == {"created": 348, "updated": 100, "failed": 1, "invalid": 1}
    resent = Counter(service.received)
    chunk_1_2 = [r.key for r in src[:201] if r.status is RowStatus.VALID]
    assert len(chunk_1_2) == 200 and all(resent[k] == 1 for k in chunk_1_2)  # acked: not resent
    in_flight = [r.key for r in src[201:301]]
    assert all(resent[k] == 2 for k in in_flight)  # in flight, safe: sent again
    assert len(service.records) == 448
    last = Journal(store, "nightly").last_run()
    assert last is not None and (last.run_id, last.attempts) == ("run-A", 2)

    # the next night: nothing changed except 3 rows; the failed row is retried
    service.received.clear()
    report = run(store, tmp_path, source(450, changed={5, 6, 7}), service, new_run_id="run-C")
    assert Counter(report.values()) == {"unchanged": 445, "updated": 3, "failed": 1, "invalid": 1}
    ids = {k: service.records[k] for k in ("k5", "k6", "k7")}
    # known rows go by ledger id; the failed row was never created, so by its own key
    assert Counter(service.received) == Counter([*ids.values(), "bad12"])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=350),
    die=st.integers(min_value=1, max_value=4),
    unsafe_every=st.integers(min_value=0, max_value=4),
)
def test_any_kill_point_resumes_to_an_exact_account(n: int, die: int, unsafe_every: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = [prepared(i, f"k{i}") for i in range(2, n + 2)]
        unsafe = set()
        if unsafe_every:
            for row in src[::unsafe_every]:
                assert row.payload is not None
                del row.payload["match_by"], row.payload["match_value"]
                unsafe.add(row.source.source_row)
        service = ToyService()
        with StateStore(Path(tmp) / "state.db", durable=False) as store:
            chunks = (n + MAX_BATCH - 1) // MAX_BATCH
            if die <= chunks:
                with pytest.raises(Killed):
                    run(store, tmp, src, service, die_in_chunk=die)
            else:
                run(store, tmp, src, service)
            acked = min(die - 1, chunks) * MAX_BATCH
            report = run(store, tmp, src, service, new_run_id="second")
        assert sorted(report) == [r.source.source_row for r in src]  # every row exactly once
        assert max(service.created.values()) == 1  # no record created twice
        names = Counter(service.received)
        for row in src[:acked]:  # acknowledged before the kill: never sent again
            if row.payload is not None and "match_value" in row.payload:
                assert names[row.payload["match_value"]] == 1
        in_flight = src[acked : acked + MAX_BATCH] if die <= chunks else []
        held = {r.source.source_row for r in in_flight if r.source.source_row in unsafe}
        assert {s for s, st_ in report.items() if st_ == "in_doubt"} == held

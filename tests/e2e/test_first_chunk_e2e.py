"""A sending run's first chunk, against the sandbox over loopback: it is journaled and queued
once the first ``sizes.FIRST_SLICE_ROWS`` rows of the first read batch are prepared, before
the rest of that batch is (prepare/core.py ``head_first``, prepare/digests.py); the rows
prepared while it is in flight lose nothing, whatever its answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recordsync.prepare import core
from recordsync.run.pipeline import run_pipeline
from recordsync.state import Journal
from recordsync.tuning import sizes

from .support import all_records, served, target
from .test_ledger_e2e import request, write, write_csv
from .test_report_stops_e2e import checked

ROWS = 60
FIRST = 12


def project(tmp: Path) -> Path:
    write_csv(
        tmp / "people.csv", ["Name", "Email"], [[f"P{i}", f"p{i}@x.example"] for i in range(ROWS)]
    )
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
    )
    return write(
        tmp / "p.yaml", "steps: [people.yaml]\nsend: {chunk_size: 10, canary_chunk_size: 10}\n"
    )


@pytest.fixture
def first_rows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The first rows on their own are ``FIRST``; returns, for each list of rows prepared,
    (its first source line, the chunks journaled when it was prepared)."""
    monkeypatch.setattr(sizes, "FIRST_SLICE_ROWS", FIRST)
    seen: list[tuple[int, int]] = []
    begun = [0]
    build, begin = core._build_rows, Journal.begin_chunk

    def counted_begin(self: Journal, *a: Any, **kw: Any) -> Any:
        begun[0] += 1
        return begin(self, *a, **kw)

    def watched_build(part: Any, *a: Any, **kw: Any) -> Any:
        seen.append((int(part.rows[0]), begun[0]))
        return build(part, *a, **kw)

    monkeypatch.setattr(Journal, "begin_chunk", counted_begin)
    monkeypatch.setattr(core, "_build_rows", watched_build)
    return seen


def test_the_first_chunk_is_journaled_before_the_rest_of_the_batch_is_prepared(
    tmp_path: Path, first_rows: list[tuple[int, int]]
) -> None:
    with served(tmp_path / "s.db") as url:
        result = run_pipeline(request(tmp_path, project(tmp_path)), target=target(url))
        records = all_records(url, "contacts")
    summary, _ = checked(result)
    assert result.exit_code == 0 and summary["totals"]["created"] == ROWS
    assert sorted(r["email"] for r in records) == sorted(
        f"p{i}@x.example" for i in range(ROWS)
    )
    # lines 2.. : the first FIRST rows prepared before any chunk; the rest after the first
    # chunk was journaled (cleared to be sent, the worker sends it while they are prepared)
    assert first_rows[0] == (2, 0)
    rest = [(line, begun) for line, begun in first_rows if line == 2 + FIRST]
    assert rest and rest[0][1] >= 1, first_rows


def test_an_error_answer_to_the_first_chunk_while_the_rest_is_prepared_loses_no_row(
    tmp_path: Path, first_rows: list[tuple[int, int]]
) -> None:
    """The first chunk is answered with an authentication failure while the rows after it
    are prepared: the run stops, its rows are failed, every other row is reported not sent,
    nothing else went out, and the report adds up."""
    with served(tmp_path / "s.db", faults=["status:401:path=/batch"]) as url:
        result = run_pipeline(request(tmp_path, project(tmp_path)), target=target(url))
        records = all_records(url, "contacts")
    summary, _ = checked(result)
    t = summary["totals"]
    assert summary["stop"]["kind"] == "auth" and result.exit_code == 3, summary["stop"]
    assert t["rows_read"] == ROWS and t["failed"] == ROWS and not records
    assert t["not_sent"] == ROWS - t["rows_sent"]
    assert any(begun >= 1 for line, begun in first_rows if line > 1 + FIRST), first_rows

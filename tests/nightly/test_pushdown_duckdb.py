"""``change_detection: database`` on a DuckDB query over a Parquet file, whole runs into the
real sandbox: the diff runs inside DuckDB (its table of synced rows in a DuckDB file beside
the state store) and only its rows reach recordsync (counted at the reader)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.nightly.support import (
    PASSES,
    Fetched,
    contacts,
    full_then_diff,
    killed,
    project,
    refused_then_allowed,
    run,
    stamp_all,
    step_of,
    written_since_stamp,
)

from e2e.support import all_records, served  # tests/ is on sys.path

MAPPING = contacts(
    "  key: id\n"
    "  query: SELECT id, first, email, score FROM 'people.parquet'\n"
    "  change_detection: database\n"
)


def write(path: Path, ids: list[int], scores: dict[int, str] | None = None) -> None:
    scores = scores or {}
    pq.write_table(
        pa.table(
            {
                "id": ids,
                "first": [f"Ann{i}" for i in ids],
                "email": [f"ann{i}@example.org" for i in ids],
                "score": [scores.get(i, str(i * 2)) for i in ids],
            }
        ),
        path,
    )


def test_only_the_diff_leaves_duckdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = project(tmp_path / "p", MAPPING)
    data = tmp_path / "p" / "people.parquet"
    ids = list(range(1, 31))
    write(data, ids)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        first = run(pipeline, work, url)
        assert (first.exit_code, step_of(first)["created"]) == (0, 30)
        assert fetched.rows == PASSES * 30
        assert (work / "synced").is_dir()

        fetched.rows = 0
        second = run(pipeline, work, url)
        assert (step_of(second)["rows_unchanged"], step_of(second)["rows_sent"]) == (30, 0)
        assert fetched.rows == 0

        stamp_all(work / "sandbox.db")
        write(data, [i for i in ids if i != 9], {4: "55"})  # one changed, one gone
        fetched.rows = 0
        third = run(pipeline, work, url)
        step = step_of(third)
        assert (third.exit_code, step["updated"], step["rows_unchanged"]) == (0, 1, 28)
        assert step["deleted"] == 1 and third.summary["accounting_ok"]
        assert fetched.rows == PASSES * 1
        assert written_since_stamp(url) == {"ann4@example.org"}
        assert "ann9@example.org" not in {r["email"] for r in all_records(url, "contacts")}


def test_vanished_keys_above_max_count_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three keys vanish from DuckDB's diff with ``max_count: 2``: refused (exit 3), nothing
    deleted and no row read; ``--allow-mass-deletes`` deletes them."""
    limited = MAPPING.replace("max_share: 0.5}", "max_share: 0.5, max_count: 2}")
    pipeline = project(tmp_path / "p", limited)
    data = tmp_path / "p" / "people.parquet"
    ids = list(range(1, 31))
    write(data, ids)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0
        write(data, [i for i in ids if i not in (5, 6, 7)])
        refused_then_allowed(pipeline, work, url, fetched, total=30, gone=3)
        assert len(all_records(url, "contacts")) == 27


@pytest.mark.parametrize("point", ["update", "commit", "ack"])
def test_killed_mid_step_the_resumed_run_sends_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Killed with SIGKILL before DuckDB's table is updated (``update``), after it but before
    the step's snapshot is registered (``commit``), or after the first acknowledged chunk
    (``ack``, one row a chunk): the resumed run sends only what was never acknowledged; the
    run after it reads every row and sends nothing, the next one reads none."""
    pipeline = project(tmp_path / "p", MAPPING)
    (tmp_path / "p" / "p.yaml").write_text(
        "name: pd\nsend: {chunk_size: 1, canary_chunk_size: 1}\n"
        "steps:\n  - mapping: m.yaml\n    name: people\n"
    )
    data = tmp_path / "p" / "people.parquet"
    ids = list(range(1, 31))
    write(data, ids)
    work = tmp_path / "work"
    fetched = Fetched(monkeypatch)
    changed = {f"ann{i}@example.org" for i in (3, 17, 30)}
    with served(work / "sandbox.db") as url:
        assert run(pipeline, work, url).exit_code == 0
        assert run(pipeline, work, url).exit_code == 0
        write(data, ids, {3: "77", 17: "77", 30: "77"})
        stamp_all(work / "sandbox.db")
        killed(point, pipeline, work, url)
        sent_before_kill = written_since_stamp(url)
        acked = changed if point in ("update", "commit") else {"ann3@example.org"}
        assert acked <= sent_before_kill <= changed
        stamp_all(work / "sandbox.db")

        resumed = run(pipeline, work, url)
        assert (resumed.exit_code, resumed.summary["attempts"]) == (0, 2), resumed.summary
        again = written_since_stamp(url)
        assert changed - sent_before_kill <= again <= changed - acked
        scores = {r["lead_score"] for r in all_records(url, "contacts") if r["email"] in changed}
        assert scores == {77} and len(all_records(url, "contacts")) == 30

        stamp_all(work / "sandbox.db")
        full_then_diff(pipeline, work, url, fetched, total=30)

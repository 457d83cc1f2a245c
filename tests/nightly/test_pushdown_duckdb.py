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
    project,
    run,
    stamp_all,
    step_of,
    written_since_stamp,
)

from e2e.support import all_records, served  # tests/ is on sys.path

MAPPING = """object_type: contacts
source:
  key: id
  query: SELECT id, first, email, score FROM 'people.parquet'
  change_detection: database
name: {column: first}
match_by: email
fields:
  email: email
  lead_score: score
mirror_deletes: {enabled: true, max_share: 0.5}
"""


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

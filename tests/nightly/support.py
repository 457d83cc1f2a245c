"""Whole runs of a one-step pipeline reading a PostgreSQL query into the real sandbox (the
query-source tests of this folder): the project, the run, what left the database (rows
counted at the reader) and what reached the service (records compared in the sandbox)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.support import all_records, target  # tests/ is on sys.path
from recordsync.read import sql
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy

PASSES = 3
"""Reads of a contacts step's rows: the duplicate scan, the merge scan, the rows; the diff is
materialized once in the database, each pass reads it."""


def contacts(source: str, *, mirror: bool = True) -> str:
    """The contacts mapping of these tests (name, e-mail match, two fields) reading ``source``
    (the lines of the ``source:`` block, each indented by two spaces), with mirror deletes
    (at most half the records) unless ``mirror`` is false."""
    mapping = (
        f"object_type: contacts\nsource:\n{source}name: {{column: first}}\nmatch_by: email\n"
        "fields:\n  email: email\n  lead_score: score\n"
    )
    return mapping + ("mirror_deletes: {enabled: true, max_share: 0.5}\n" if mirror else "")


def project(root: Path, mapping: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "m.yaml").write_text(mapping, encoding="utf-8")
    (root / "p.yaml").write_text("name: pd\nsteps:\n  - mapping: m.yaml\n    name: people\n")
    return root / "p.yaml"


class Fetched:
    """Counts the rows a query source hands over to the run (what left the database: the
    rows :func:`recordsync.read.sql.iter_sql` yields, whichever engine reads them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows = 0
        real = sql.iter_sql

        def counting(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for sb in real(*args, **kwargs):
                self.rows += sb.batch.num_rows
                yield sb

        monkeypatch.setattr(sql, "iter_sql", counting)


def run(pipeline: Path, work: Path, url: str, **kw: Any) -> Any:
    """The pipeline run into the sandbox at ``url``; the state in ``work/state.db`` unless
    ``state_db`` is given (a PostgreSQL state)."""
    kw.setdefault("state_db", work / "state.db")
    request = RunRequest(
        pipeline,
        report_dir=work / "reports",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **kw,
    )
    return run_pipeline(request, target=target(url))


def stamps(url: str) -> dict[int, str]:
    """Record id → its ``updated_at`` in the sandbox: a record written again changes it."""
    return {int(r["id"]): str(r["updated_at"]) for r in all_records(url, "contacts")}


def step_of(result: Any) -> dict[str, Any]:
    return dict(result.summary["steps"][0])


SENTINEL = "2001-01-01T00:00:00Z"


def stamp_all(sandbox_db: Path) -> None:
    """Every record's ``updated_at`` set to :data:`SENTINEL` (older than any write): a record
    the service writes again afterwards shows it (counted at the service, not the report)."""
    with sqlite3.connect(sandbox_db) as conn:
        conn.execute("UPDATE records SET updated_at = ?", (SENTINEL,))


def written_since_stamp(url: str) -> set[str]:
    return {str(r["email"]) for r in all_records(url, "contacts") if r["updated_at"] != SENTINEL}


def refused_then_allowed(
    pipeline: Path, work: Path, url: str, fetched: Fetched, *, total: int, gone: int
) -> Any:
    """``gone`` of ``total`` keys vanished from the database's diff, with
    ``mirror_deletes.max_count: 2``: refused (exit 3, naming the count and the limit), nothing
    deleted, found without reading a row; then ``--allow-mass-deletes`` deletes them (that
    run's result)."""
    fetched.rows = 0
    refused = run(pipeline, work, url)
    assert refused.exit_code == 3
    share = f"{100 * gone / total:.1f}%"
    limit = f"{gone} of {total} records ({share}) left the source, above mirror_deletes.max_count 2"
    assert limit in str(refused.error)
    assert fetched.rows == 0
    assert len(all_records(url, "contacts")) == total
    allowed = run(pipeline, work, url, allow_mass_deletes=True)
    assert (allowed.exit_code, step_of(allowed)["deleted"]) == (0, gone)
    return allowed


def full_then_diff(pipeline: Path, work: Path, url: str, fetched: Fetched, *, total: int) -> None:
    """After a resumed run, which leaves no snapshot: the next run reads every row and writes
    nothing to the service; the one after it reads nothing (a diff pass) and finds all
    ``total`` rows unchanged."""
    fetched.rows = 0
    full = run(pipeline, work, url)
    assert (full.exit_code, step_of(full)["rows_sent"], written_since_stamp(url)) == (0, 0, set())
    assert fetched.rows > 0
    fetched.rows = 0
    diff = run(pipeline, work, url)
    assert (step_of(diff)["rows_unchanged"], step_of(diff)["rows_sent"]) == (total, 0)
    assert fetched.rows == 0


def killed(point: str, pipeline: Path, work: Path, url: str) -> None:
    """The run, in a process of its own, killed with SIGKILL at ``point``
    (tests/nightly/pushdown_child.py)."""
    tests = Path(__file__).resolve().parents[1]
    path = os.pathsep.join([str(tests.parent / "src"), str(tests), str(tests.parent)])
    env = {**os.environ, "PYTHONPATH": path}
    child = tests / "nightly" / "pushdown_child.py"
    argv = [sys.executable, str(child), point, str(pipeline), str(work), url]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]

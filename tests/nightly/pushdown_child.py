"""A run of tests/nightly/test_pushdown_pg.py's project in a process of its own that kills
itself with SIGKILL at a given point (the kill -9 tests): ``python pushdown_child.py POINT
PIPELINE WORK URL``. POINT: ``update`` (the step's ledger is written, the database's table
of synced rows not yet), ``commit`` (the table updated, the step's new snapshot not yet
registered), ``diff`` (inside the diff's transaction, its first table made) or ``ack`` (the
first chunk is acknowledged in the journal). PostgreSQL's and DuckDB's tables alike."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from e2e.support import target
from recordsync.nightly.acked_keys import AckedKeysWriter
from recordsync.read.duckdb_diff import DuckDiffTable
from recordsync.read.pg_diff import DigestTable
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state.journal import Journal


def _die(*_: Any, **__: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    point, pipeline, work, url = sys.argv[1:5]
    if point == "update":
        DigestTable.update = _die  # type: ignore[method-assign]
        DuckDiffTable.update = _die  # type: ignore[method-assign]
    elif point == "commit":
        AckedKeysWriter.commit = _die  # type: ignore[method-assign]
    elif point == "diff":  # PostgreSQL: the keys' table made, the rows' not (one transaction)
        keys = DigestTable._keys

        def keys_then_die(self: DigestTable, *a: Any) -> Any:
            keys(self, *a)
            _die()

        DigestTable._keys = keys_then_die  # type: ignore[method-assign]
    else:
        real = Journal.ack_chunk

        def ack_then_die(self: Journal, *a: Any, **kw: Any) -> Any:
            real(self, *a, **kw)
            _die()

        Journal.ack_chunk = ack_then_die  # type: ignore[method-assign]
    request = RunRequest(
        Path(pipeline),
        report_dir=Path(work) / "reports",
        state_db=Path(work) / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
    )
    run_pipeline(request, target=target(url))
    raise SystemExit("the run was not killed")


if __name__ == "__main__":
    main()

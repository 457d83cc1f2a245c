"""Reading sources in real runs against the sandbox over loopback: a Parquet directory's rows
are numbered across its files (the run journals, re-runs and resumes them); a cp1252 file
holding a byte cp1252 leaves undefined is a named error (in the header) or an invalid row
(in a data row), the same in `validate` and `run`."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recordsync.errors import RunAborted
from recordsync.send.pipeline import run_pipeline
from recordsync.state import Journal

from .support import all_records, journal_full_at_the_third_chunk, served, target
from .test_ledger_e2e import request, results, totals, write


# -- a Parquet directory ----------------------------------------------------------------
def parquet_dir_pipeline(tmp: Path) -> Path:
    """Three files of 5 rows each under one directory (written out of name order)."""
    for name, first in (("part-2.parquet", 10), ("part-0.parquet", 0), ("part-1.parquet", 5)):
        ids = range(first, first + 5)
        table = pa.table(
            {"name": [f"Person {i}" for i in ids], "email": [f"p{i}@dir.example" for i in ids]}
        )
        (tmp / "exports").mkdir(exist_ok=True)
        pq.write_table(table, tmp / "exports" / name)
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: exports, format: parquet}\nname: name\n"
        "match_by: [email]\nfields: {email: email}\n",
    )
    return write(tmp / "p.yaml", "name: dir\nsteps: [people.yaml]\nsend: {chunk_size: 4}\n")


def test_a_parquet_directory_runs_with_rows_numbered_across_its_files(tmp_path: Path) -> None:
    pipeline = parquet_dir_pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        again = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = all_records(url, "contacts")
    assert first.error is None and first.exit_code == 0, first.summary
    assert totals(first)["created"] == 15
    rows = [(Path(r["source_file"]).name, int(r["source_row"])) for r in results(first)]
    files = [f"part-{i // 5}.parquet" for i in range(15)]  # sorted file names, then rows
    assert sorted(rows, key=lambda r: r[1]) == list(zip(files, range(1, 16), strict=True))
    assert len(held) == 15
    assert again.exit_code == 0 and totals(again)["rows_unchanged"] == 15


def test_a_parquet_directory_run_stopped_part_way_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = parquet_dir_pipeline(tmp_path)
    with served(tmp_path / "s.db") as url:
        with monkeypatch.context() as m:
            m.setattr(Journal, "begin_chunk", journal_full_at_the_third_chunk())
            with pytest.raises(RunAborted, match="the next run resumes this one"):
                run_pipeline(request(tmp_path, pipeline), target=target(url))
        sent_before = len(all_records(url, "contacts"))
        resumed = run_pipeline(request(tmp_path, pipeline), target=target(url))
        held = all_records(url, "contacts")
    assert 0 < sent_before < 15 and len(held) == 15
    assert resumed.error is None and resumed.exit_code == 0, resumed.summary
    assert resumed.summary["accounting_ok"]
    assert sorted(r["email"] for r in held) == sorted(f"p{i}@dir.example" for i in range(15))

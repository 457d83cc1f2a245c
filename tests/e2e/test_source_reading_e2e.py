"""Reading sources in real runs against the sandbox over loopback: a Parquet directory's rows
are numbered across its files (the run journals, re-runs and resumes them); a cp1252 file
holding a byte cp1252 leaves undefined is a named error (in the header) or an invalid row
(in a data row), the same in `validate` and `run`."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recordsync.core.errors import RunAborted
from recordsync.run.pipeline import run_pipeline
from recordsync.state import Journal

from .support import KEY, all_records, journal_full_at_the_third_chunk, served, target
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


# -- a byte cp1252 leaves undefined -------------------------------------------------------
def cp1252_pipeline(tmp: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> list[str]:
    (tmp / "people.csv").write_bytes(data)
    write(
        tmp / "people.yaml",
        "object_type: contacts\nsource: {path: people.csv, encoding: cp1252}\nname: Name\n"
        "match_by: [email]\nfields: {email: Email}\n",
    )
    write(tmp / "p.yaml", "name: people\nsteps: [people.yaml]\n")
    monkeypatch.setenv("RECORDSYNC_API_KEY", KEY)
    for var in ("RECORDSYNC_BASE_URL", "RECORDSYNC_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp)
    return ["-q", "--state-db", "st/state.db", "--report-dir", "reports"]


def test_an_undefined_byte_in_the_header_is_exit_2_in_validate_and_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = b"Name,E\x81mail\r\nAnn,ann@x.example\r\n"
    args = cp1252_pipeline(tmp_path, monkeypatch, data)
    with served(tmp_path / "s.db") as url:
        checked = cli("validate", "p.yaml")
        said = capsys.readouterr()
        ran = cli("run", "p.yaml", *args, "--base-url", url)
        run_said = capsys.readouterr()
        held = all_records(url, "contacts")
    assert (checked, ran, held) == (2, 2, [])
    for text in (said.out + said.err, run_said.err):
        assert "people.csv:1" in text and "[source.encoding]" in text
        assert "byte 0x81 is not cp1252 text" in text
        assert "recordsync bug" not in text and "Traceback" not in text


def test_an_undefined_byte_in_a_row_is_that_row_invalid_in_validate_and_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Callable[..., int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = (
        b"Name,Email\r\nRen\xe9e,renee@x.example\r\nB\x8den,ben@x.example\r\n"
        b"Cy,cy@x.example\r\n"
    )
    args = cp1252_pipeline(tmp_path, monkeypatch, data)
    with served(tmp_path / "s.db") as url:
        checked = cli("validate", "--scan", "p.yaml")
        said = capsys.readouterr().out
        ran = cli("run", "p.yaml", *args, "--base-url", url)
        run_said = capsys.readouterr()
        held = all_records(url, "contacts")
    assert checked == 0  # a row-level problem: the pipeline itself is valid
    assert "3 (2 valid, 1 invalid)" in said
    assert "row 3: byte 0x8d is not cp1252 text" in said
    assert ran == 1, run_said.err
    assert sorted(r["name"] for r in held) == ["Cy", "Renée"]
    [report] = [p for p in (tmp_path / "reports").iterdir() if ".partial" not in p.name]
    with open(report / "failures.csv", newline="", encoding="utf-8") as f:
        [failed] = list(csv.DictReader(f))
    assert (failed["_source_row"], failed["_status"]) == ("3", "invalid")
    assert failed["_error"].startswith("line 3: byte 0x8d is not cp1252 text")
    assert failed["Email"] == "ben@x.example"

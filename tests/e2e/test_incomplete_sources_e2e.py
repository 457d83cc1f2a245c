"""Incomplete sources never delete: with mirror deletes on, a CSV file that ends mid-line, a
source file that changes while the step reads it, or a Parquet file cut short deletes no
record; the run exits non-zero and says which file and why. An honest export without a final
line ending still deletes. Over loopback against the sandbox."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import recordsync.read as read_package
import recordsync.read.parquet_reader as parquet_reader
from recordsync.core.errors import SourceError, exit_code_for
from recordsync.read import SourceBatch
from recordsync.run.pipeline import run_pipeline

from .support import all_records, served, target
from .test_ledger_e2e import request, results

ROWS = 30


def lines_of(rows: range | list[int]) -> list[str]:
    return [f"p{i}@m.example,P{i}" for i in rows]


def setup(tmp: Path, source: str = "m.csv", extra: str = "") -> Path:
    (tmp / "m.yaml").write_text(
        f"object_type: contacts\nsource: {{path: {source}{extra}}}\nname: Name\n"
        "match_by: [email]\nfields: {email: Email}\n"
        "mirror_deletes: {enabled: true, max_share: 0.5}\n"
    )
    (tmp / "mirror.yaml").write_text("steps: [m.yaml]\n")
    return tmp / "mirror.yaml"


def write_csv(path: Path, lines: list[str], end: str = "\n") -> None:
    path.write_bytes(("Email,Name\n" + "\n".join(lines) + end).encode())


def live_emails(url: str) -> set[str]:
    return {r["email"] for r in all_records(url, "contacts")}


def step(result: Any) -> dict[str, Any]:
    return dict(result.summary["steps"][0])


@pytest.mark.parametrize(
    ("last", "why"),
    [
        ('p25@m.example,"P2', "ends inside a quoted field"),  # a valid row, but cut
        ("p25@m.exa", "has 1 of 2 cells"),
    ],
)
def test_a_csv_cut_mid_line_deletes_nothing_and_says_why(
    tmp_path: Path, last: str, why: str
) -> None:
    """Rows 26-29 are missing because the export was cut inside row 25 (no line ending):
    within the share limit, their records would be deleted and re-created next run."""
    pipeline = setup(tmp_path)
    write_csv(tmp_path / "m.csv", lines_of(range(ROWS)))
    with served(tmp_path / "s.db") as url:
        first = run_pipeline(request(tmp_path, pipeline), target=target(url))
        assert first.exit_code == 0
        write_csv(tmp_path / "m.csv", [*lines_of(range(25)), last], end="")
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = live_emails(url)
    s = step(second)
    assert s["deleted"] == 0 and len(live) == ROWS
    assert second.exit_code == 1 and second.summary["accounting_ok"]
    reason = s["mirror_deletes_skipped"]
    assert f"m.csv: its last record (line 27) has no line ending and {why}" in reason
    assert "the file ends mid-line (cut short, or still being written)" in reason
    assert "no record was deleted: run again once the export is complete" in reason
    report = (second.report_dir / "report.md").read_text()
    assert "Mirror deletes of step m skipped: " in report and why in report
    cut = [r for r in results(second) if r["source_row"] == "27"]
    assert [r["status"] for r in cut] == ["invalid"]  # never sent with its cut value
    assert "the file ends mid-line" in cut[0]["error"]


def test_a_csv_cut_inside_a_multi_line_cell_sends_no_line_of_it(tmp_path: Path) -> None:
    """The export was cut inside row 25's quoted Name, whose second line has the cells of a
    row: that line is text of the cut cell, never a record of its own; nothing is deleted."""
    pipeline = setup(tmp_path)
    write_csv(tmp_path / "m.csv", lines_of(range(ROWS)))
    with served(tmp_path / "s.db") as url:
        assert run_pipeline(request(tmp_path, pipeline), target=target(url)).exit_code == 0
        cut = 'p25@m.example,"P25, line one\nnot-a-row@m.example,line two'
        write_csv(tmp_path / "m.csv", [*lines_of(range(25)), cut], end="")
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = live_emails(url)
    s = step(second)
    assert s["deleted"] == 0 and live == {f"p{i}@m.example" for i in range(ROWS)}
    assert second.exit_code == 1 and second.summary["accounting_ok"]
    reason = s["mirror_deletes_skipped"]
    assert "m.csv: its last record (lines 27 to 28) has no line ending and ends inside a" in reason
    assert "no record was deleted: run again once the export is complete" in reason
    got = {r["source_row"]: r for r in results(second)}
    assert sorted(got, key=int) == [str(n) for n in range(2, 28)]  # no row 28
    assert got["27"]["status"] == "invalid"
    assert "cut short: the quote at character 15 (cell 2)" in got["27"]["error"]


def test_an_export_without_a_final_line_ending_still_deletes(tmp_path: Path) -> None:
    """Many honest exports end without a line ending: a complete last line (its quotes
    closed, doubled quotes inside) is read as it is, and the deletes run."""
    pipeline = setup(tmp_path)
    write_csv(tmp_path / "m.csv", lines_of(range(ROWS)))
    with served(tmp_path / "s.db") as url:
        assert run_pipeline(request(tmp_path, pipeline), target=target(url)).exit_code == 0
        kept = lines_of([i for i in range(ROWS - 1) if i != 7])
        kept[-1] = 'p28@m.example,"P ""28"""'
        write_csv(tmp_path / "m.csv", kept, end="")
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = live_emails(url)
    s = step(second)
    assert (s["deleted"], s["mirror_deletes_skipped"], s["rows_invalid"]) == (2, None, 0)
    assert "p7@m.example" not in live and "p29@m.example" not in live and len(live) == ROWS - 2
    assert second.exit_code == 0


def _parquet(path: Path, rows: range | list[int]) -> None:
    ids = list(rows)
    table = pa.table({"Email": [f"p{i}@m.example" for i in ids], "Name": [f"P{i}" for i in ids]})
    pq.write_table(table, path)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_source_that_changes_while_it_is_read_deletes_nothing(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export is still being written: right after the first read of the step yields its
    first batch, the file changes (CSV: a line appended; Parquet: written again, a second
    later). Row 3 left the source, but nothing is deleted."""
    name = "m.csv" if kind == "csv" else "m.parquet"
    pipeline = setup(tmp_path, name, ", batch_size: 5")
    src = tmp_path / name

    def export(rows: list[int]) -> None:
        if kind == "csv":
            write_csv(src, lines_of(rows))
        else:
            _parquet(src, rows)

    export(list(range(ROWS)))
    changed: list[str] = []

    def change() -> None:
        if kind == "csv":
            with open(src, "a", encoding="utf-8") as f:
                f.write("p99@m.example,P99\n")
        else:
            st = os.stat(src)
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        changed.append(name)

    def changing(real: Any) -> Any:
        def read(*args: Any, **kwargs: Any) -> Iterator[SourceBatch]:
            for i, sb in enumerate(real(*args, **kwargs)):
                yield sb
                if i == 0 and not changed:
                    change()

        return read

    with served(tmp_path / "s.db") as url:
        assert run_pipeline(request(tmp_path, pipeline), target=target(url)).exit_code == 0
        export([i for i in range(ROWS) if i != 3])
        if kind == "csv":
            real = read_package.iter_csv  # type: ignore[attr-defined]  # what iter_source calls
            monkeypatch.setattr(read_package, "iter_csv", changing(real))
        else:
            real = parquet_reader.iter_parquet
            monkeypatch.setattr(parquet_reader, "iter_parquet", changing(real))
        second = run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = live_emails(url)
    assert changed == [name]
    s = step(second)
    assert s["deleted"] == 0 and "p3@m.example" in live
    assert second.exit_code == 1
    reason = s["mirror_deletes_skipped"]
    assert "the source changed while the step read it (" in reason and f"{name}: " in reason
    what = "its size went from" if kind == "csv" else "it was modified at"
    assert what in reason
    assert "no record was deleted: run again once the export is complete" in reason
    assert "Mirror deletes of step m skipped: the source changed" in (
        second.report_dir / "report.md"
    ).read_text()


def test_a_parquet_file_cut_short_is_named_and_deletes_nothing(tmp_path: Path) -> None:
    """Row 3 left the export, which is cut short (its footer missing: still being written,
    or copied incompletely): the run names the file and what to do; nothing is deleted."""
    pipeline = setup(tmp_path, "m.parquet")
    _parquet(tmp_path / "m.parquet", range(ROWS))
    with served(tmp_path / "s.db") as url:
        assert run_pipeline(request(tmp_path, pipeline), target=target(url)).exit_code == 0
        _parquet(tmp_path / "m.parquet", [i for i in range(ROWS) if i != 3])
        data = (tmp_path / "m.parquet").read_bytes()
        (tmp_path / "m.parquet").write_bytes(data[: len(data) - 40])
        with pytest.raises(SourceError) as err:  # checked before the run starts
            run_pipeline(request(tmp_path, pipeline), target=target(url))
        live = live_emails(url)
    assert "p3@m.example" in live and len(live) == ROWS
    assert exit_code_for(err.value) == 2
    message = str(err.value)
    assert "m.parquet is cut short: it has no Parquet footer" in message
    assert "run again once the file is complete" in message

"""The DuckDB side of ``change_detection: database``: what its connection spills."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from recordsync.config.models import SourceConfig
from recordsync.read.duckdb_diff import DuckDiffTable


def test_the_diff_spills_to_a_directory_of_its_own_removed_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, cwd = tmp_path / "project", tmp_path / "cwd"
    base.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # DuckDB's own default spills to ./.tmp
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT range AS id, repeat('n', 60) || range AS name FROM range(300000))"
        f" TO '{base / 'people.parquet'}' (FORMAT parquet)"
    )
    con.close()
    src = SourceConfig.model_validate({
        "query": "SELECT id, name FROM 'people.parquet'", "key": "id",
        "change_detection": "database", "memory_limit": "64MB",
    })
    table = DuckDiffTable(src, "s1", base, tmp_path / "synced")
    table.open()
    row = table._con.execute("SELECT current_setting('temp_directory')").fetchone()
    spill = Path(row[0])
    assert spill.is_dir() and tmp_path not in spill.parents
    table.diff("id", ["id", "name"], b"salt", full=True)
    assert len(table.diff_keys()) == 300000
    table.close()
    assert not spill.exists()
    assert not (cwd / ".tmp").exists() and list(cwd.iterdir()) == []
    table.close()  # twice: nothing left to do

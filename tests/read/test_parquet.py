"""Parquet sources: a file, a directory, a glob; 1-based row numbers running on across the
files, in sorted file order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config import SourceConfig
from recordsync.core.errors import EXIT_CONFIG, SourceError, exit_code_for
from recordsync.read import iter_source, source_columns


def _write(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}), path)


def _rows(src: SourceConfig, base: Path) -> list[tuple[str, int, int]]:
    out = []
    for sb in iter_source(src, base):
        out += [
            (Path(sb.file).name, n, r["id"])
            for n, r in zip(sb.rows.tolist(), sb.batch.to_pylist(), strict=True)
        ]
    return out


def test_file_directory_and_glob(tmp_path: Path) -> None:
    _write(tmp_path / "x" / "a.parquet", [1, 2])
    _write(tmp_path / "x" / "b.parquet", [3])
    assert _rows(SourceConfig(path="x/a.parquet"), tmp_path) == [
        ("a.parquet", 1, 1),
        ("a.parquet", 2, 2),
    ]
    both = [("a.parquet", 1, 1), ("a.parquet", 2, 2), ("b.parquet", 3, 3)]
    assert _rows(SourceConfig(path="x", format="parquet"), tmp_path) == both
    assert _rows(SourceConfig(path="x/*.parquet"), tmp_path) == both
    assert source_columns(SourceConfig(path="x/*.parquet"), tmp_path) == ["id", "name"]


def test_row_numbers_run_on_across_files_in_sorted_name_order(tmp_path: Path) -> None:
    for name, ids in (("c.parquet", [7, 8]), ("a.parquet", [1, 2, 3]), ("sub/b.parquet", [4])):
        _write(tmp_path / "d" / name, ids)
    _write(tmp_path / "d" / "empty.parquet", [])
    rows = _rows(SourceConfig(path="d", format="parquet", batch_size=2), tmp_path)
    assert rows == [
        ("a.parquet", 1, 1),
        ("a.parquet", 2, 2),
        ("a.parquet", 3, 3),
        ("c.parquet", 4, 7),
        ("c.parquet", 5, 8),
        ("b.parquet", 6, 4),  # d/sub/b.parquet sorts after d/empty.parquet and d/c.parquet
    ]


def test_small_batches_number_rows_continuously(tmp_path: Path) -> None:
    _write(tmp_path / "a.parquet", list(range(10)))
    rows = _rows(SourceConfig(path="a.parquet", batch_size=3), tmp_path)
    assert [n for _, n, _ in rows] == list(range(1, 11))


def test_missing_and_empty_glob_are_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not found"):
        _rows(SourceConfig(path="none.parquet"), tmp_path)
    with pytest.raises(SourceError, match="no Parquet files"):
        _rows(SourceConfig(path="*.parquet"), tmp_path)


def test_a_text_file_is_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "fake.parquet").write_text("id,name\n1,a\n")
    with pytest.raises(SourceError, match="Parquet"):
        _rows(SourceConfig(path="fake.parquet"), tmp_path)


def test_source_file_is_normalised_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reports show ``data/x.parquet``, not ``configs/../data/x.parquet``."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"a": ["1"]}), tmp_path / "data" / "x.parquet")
    (tmp_path / "data" / "x.csv").write_text("a\n1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("x.parquet", "x.csv"):
        (sb,) = iter_source(SourceConfig(path=f"../data/{name}"), Path("configs"))
        assert sb.file == str(Path("data") / name)
    inside = tmp_path / "configs"
    monkeypatch.chdir(inside)  # the source lies outside the current directory: absolute
    (sb,) = iter_source(SourceConfig(path="../data/x.csv"), Path("."))
    assert sb.file == str(tmp_path / "data" / "x.csv")


def test_duplicate_column_names_are_a_source_error(tmp_path: Path) -> None:
    table = pa.Table.from_arrays(
        [pa.array(["Ann"]), pa.array(["a@x.io"]), pa.array(["b@x.io"])],
        names=["Name", "Email", "Email"],
    )
    pq.write_table(table, tmp_path / "dup.parquet")
    src = SourceConfig(path="dup.parquet")
    for read in (
        lambda: source_columns(src, tmp_path),
        lambda: list(iter_source(src, tmp_path, ["Name", "Email"])),
    ):
        with pytest.raises(SourceError, match="duplicate column names: Email") as exc:
            read()
        assert str(tmp_path / "dup.parquet") in str(exc.value)
        assert exit_code_for(exc.value) == EXIT_CONFIG


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
    group=st.integers(1, 30),
    batch=st.integers(1, 25),
)
def test_row_groups_and_batches_of_any_size_give_every_row_once_in_order(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], group: int, batch: int
) -> None:
    base = tmp_path_factory.mktemp("groups")
    ids, start = [], 0
    for f, n in enumerate(sizes):
        part = list(range(start, start + n))
        start += n
        ids += part
        table = pa.table({"id": part, "name": [f"n{i}" for i in part]})
        (base / "x").mkdir(exist_ok=True)
        pq.write_table(table, base / "x" / f"{f:02}.parquet", row_group_size=group)
    rows = _rows(SourceConfig(path="x", format="parquet", batch_size=batch), base)
    assert [r[2] for r in rows] == ids
    assert [r[1] for r in rows] == list(range(1, len(ids) + 1))


def test_a_file_is_read_one_row_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # read over the whole file at once, pyarrow reads the next groups ahead: the peak memory
    # grew with the file (bench_dryrun: 258 MB at 1M rows, 486 MB at 10M in ten groups)
    pq.write_table(pa.table({"id": list(range(10))}), tmp_path / "a.parquet", row_group_size=3)
    asked: list[object] = []
    real = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: object, **kw: object) -> object:
        asked.append(kw.get("row_groups"))
        return real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    assert [r[2] for r in _rows(SourceConfig(path="a.parquet"), tmp_path)] == list(range(10))
    assert asked == [[0], [1], [2], [3]]

"""CSV, Parquet and Parquet datasets on object storage: a local S3 server (moto, started by
the tests on 127.0.0.1), credentials from the environment; other schemes through fsspec."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from recordsync.config.models import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source, source_columns
from recordsync.read.remote import glob_regex


def _put(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    with fs.open_output_stream(path, compression=None) as f:
        f.write(data)


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _src(path: str, **kw: object) -> SourceConfig:
    return SourceConfig.model_validate({"path": path, **kw})


def test_a_csv_on_s3_reads_like_a_local_one(
    bucket: tuple[pafs.S3FileSystem, str], tmp_path: Path
) -> None:
    fs, name = bucket
    text = b'id,name\n1,"two\nlines"\n2,B\n3,C,extra\n'
    _put(fs, f"{name}/in/people.csv", text)
    _put(fs, f"{name}/in/people.csv.gz", gzip.compress(text))
    for key in ("people.csv", "people.csv.gz"):
        uri = f"s3://{name}/in/{key}"
        assert source_columns(_src(uri), tmp_path) == ["id", "name"]
        (sb,) = list(iter_source(_src(uri), tmp_path))
        assert sb.file == uri
        assert sb.batch.to_pylist() == [{"id": "1", "name": "two\nlines"}, {"id": "2", "name": "B"}]
        assert sb.rows.tolist() == [2, 4]  # physical lines, as for a local file
        assert [(b.line, b.text) for b in sb.bad] == [(5, "3,C,extra")]


def test_parquet_file_prefix_and_glob_of_partitions(
    bucket: tuple[pafs.S3FileSystem, str], tmp_path: Path
) -> None:
    fs, name = bucket
    for year, ids in (("2024", [1, 2]), ("2025", [3])):
        table = pa.table({"id": ids, "name": [f"P{i}" for i in ids]})
        _put(fs, f"{name}/ds/year={year}/part-0.parquet", _parquet(table))
    _put(fs, f"{name}/ds/_SUCCESS", b"")
    _put(fs, f"{name}/ds/year=2025/notes.txt", b"not parquet")
    one = f"s3://{name}/ds/year=2024/part-0.parquet"
    (sb,) = list(iter_source(_src(one), tmp_path))
    assert sb.file == one and sb.batch.column("id").to_pylist() == [1, 2]
    for path in (f"s3://{name}/ds", f"s3://{name}/ds/", f"s3://{name}/ds/*/part-*.parquet"):
        batches = list(iter_source(_src(path, format="parquet"), tmp_path, ["id"]))
        assert [b.file for b in batches] == [
            f"s3://{name}/ds/year=2024/part-0.parquet",
            f"s3://{name}/ds/year=2025/part-0.parquet",
        ]
        assert [b.batch.column("id").to_pylist() for b in batches] == [[1, 2], [3]]
        assert source_columns(_src(path, format="parquet"), tmp_path) == ["id", "name"]


def test_missing_objects_are_source_errors_naming_the_uri(
    bucket: tuple[pafs.S3FileSystem, str], tmp_path: Path
) -> None:
    _, name = bucket
    for path in (f"s3://{name}/none.csv", f"s3://{name}/none.parquet"):
        with pytest.raises(SourceError, match="not found") as info:
            source_columns(_src(path), tmp_path)
        assert path in str(info.value) and info.value.key == "source.path"
    with pytest.raises(SourceError, match="no Parquet files match"):
        source_columns(_src(f"s3://{name}/*.parquet"), tmp_path)


def test_other_schemes_go_through_fsspec(tmp_path: Path) -> None:
    import fsspec

    mem = fsspec.filesystem("memory")
    mem.pipe("/recordsync-test/a.csv", b"id,name\n1,A\n")
    mem.pipe("/recordsync-test/p/x.parquet", _parquet(pa.table({"id": [7]})))
    (sb,) = list(iter_source(_src("memory://recordsync-test/a.csv"), tmp_path))
    assert sb.batch.to_pylist() == [{"id": "1", "name": "A"}]
    (sb,) = list(iter_source(_src("memory://recordsync-test/p", format="parquet"), tmp_path))
    assert sb.batch.to_pylist() == [{"id": 7}]


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("b/*.parquet", "b/x.parquet", True),
        ("b/*.parquet", "b/y/x.parquet", False),
        ("b/**/*.parquet", "b/x.parquet", True),
        ("b/**/*.parquet", "b/y/z/x.parquet", True),
        ("b/part-?.parquet", "b/part-1.parquet", True),
        ("b/[!x]*.csv", "b/a.csv", True),
        ("b/[!x]*.csv", "b/x.csv", False),
    ],
)
def test_globs_match_as_local_globs_do(pattern: str, path: str, hit: bool) -> None:
    assert (glob_regex(pattern).match(path) is not None) is hit

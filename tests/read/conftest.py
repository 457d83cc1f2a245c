"""Server fixtures of the source tests (one PostgreSQL and one S3 server per session)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pyarrow.fs as pafs
import pytest

from .servers import s3_server


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as url:
        yield url


_n = itertools.count()


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[pafs.S3FileSystem, str]:
    """A fresh bucket; the reader finds the server and the keys through the environment."""
    for var, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(var, value)
    fs = pafs.S3FileSystem(
        endpoint_override=s3_endpoint.split("://")[1],
        scheme="http",
        access_key="testing",
        secret_key="testing",
        region="us-east-1",
        allow_bucket_creation=True,
    )
    name = f"exports-{next(_n)}"
    fs.create_dir(name)
    return fs, name

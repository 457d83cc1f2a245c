"""Server fixtures of the source tests (one PostgreSQL and one S3 server per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import postgres_server, s3_server


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with s3_server() as url:
        yield url

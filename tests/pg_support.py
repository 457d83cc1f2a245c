"""One real PostgreSQL for the whole test session (tests/read/servers.py starts it: initdb +
pg_ctl on a temporary directory, a unix socket only; missing PostgreSQL skips, and fails
under CI), served by tests/conftest.py to every folder that needs it (read, state, e2e,
integrations), and a fresh database per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest
from tests.read.servers import postgres_server

PASSWORD = "s3cret-Pw-9f8e7d"
"""A password put in state URLs to check that it never shows (the test server trusts any)."""

_n = itertools.count()


def database_url(server: str, name: str, *, password: str | None = None) -> str:
    """The server's URL naming database ``name`` (with ``password`` for user postgres)."""
    user = f"postgres:{password}" if password else "postgres"
    rest = server.split("/postgres?", 1)[1]
    return f"postgresql://{user}@/{name}?{rest}"


def new_database(server: str) -> str:
    """A new empty database on ``server``; its URL."""
    name = f"test_{next(_n)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return database_url(server, name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The session's server (database ``postgres``, user ``postgres``, trust): started by
    the first test that needs it, stopped at the end of the session."""
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """A fresh, empty database for one test."""
    return new_database(pg_server)

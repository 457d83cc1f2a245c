"""Fixtures for the sandbox tests: a fresh sandbox on a temp SQLite file, and a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recordsync.sandbox import create_app
from recordsync.sandbox.app import SandboxApp

from .support import KEY, H, TestClient


@pytest.fixture
def app(tmp_path: Path) -> Iterator[SandboxApp]:
    application = create_app(tmp_path / "sandbox.db", api_key=KEY)
    yield application
    application.state.store.close()


@pytest.fixture
def client(app: SandboxApp) -> Iterator[TestClient]:
    with TestClient(app, headers=H) as c:
        yield c

"""The default seed's schema and users, read from the sandbox over HTTP (in-process)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from recordsync.sandbox import create_app
from recordsync.validate import Schema


@pytest.fixture(scope="session")
def seed_meta(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = tmp_path_factory.mktemp("sandbox") / "seed.sqlite"
    app = create_app(db, api_key="sk_live_validate_tests")
    with warnings.catch_warnings():
        # starlette 1.x warns at import when the TestClient runs on httpx rather than httpx2
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    with TestClient(app) as client:
        headers = {"x-api-key": "sk_live_validate_tests"}
        schema = client.get("/api/meta/schema", headers=headers).json()["data"]
        users = client.get("/api/meta/users", headers=headers).json()["data"]
    app.state.store.close()
    return {"schema": schema, "users": users}


@pytest.fixture(scope="session")
def schema(seed_meta: dict[str, Any]) -> Schema:
    return Schema.from_api(seed_meta["schema"])


@pytest.fixture(scope="session")
def users(seed_meta: dict[str, Any]) -> list[dict[str, Any]]:
    return list(seed_meta["users"])

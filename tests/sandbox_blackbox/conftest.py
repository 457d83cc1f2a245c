"""Black-box acceptance suite of the sandbox.

Written only from the seed (`record-service-interface.md`), the contract
(`service-contract.md`) and the default seed data (`sample_data/seed.yaml`); it talks to the
sandbox over HTTP (in-process through `starlette.testclient.TestClient`) via its public factory
`recordsync.sandbox.create_app` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recordsync.sandbox import create_app

KEY = "sk_live_blackbox_0123456789abcdef"


def make_client(db_path: Path, seed: Path | None = None) -> Iterator[TestClient]:
    app = create_app(str(db_path), seed=None if seed is None else str(seed), api_key=KEY)
    with TestClient(
        app, headers={"x-api-key": KEY}, follow_redirects=False, raise_server_exceptions=False
    ) as client:
        yield client


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A fresh sandbox (default seed, fresh database) with the key already set."""
    yield from make_client(tmp_path / "sandbox.db")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One sandbox per module, for tests that do not write records."""
    yield from make_client(tmp_path_factory.mktemp("shared") / "sandbox.db")


def err(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"], str)
    return str(body["error"])


def create(client: TestClient, object_type: str, name: str | None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"fields": fields}
    if name is not None:
        body["name"] = name
    response = client.put(f"/api/objects/{object_type}", json=body)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert isinstance(data, dict)
    return data


def fetch(client: TestClient, object_type: str, record_id: int) -> dict[str, Any]:
    response = client.get(f"/api/objects/{object_type}", params={"id": record_id})
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert isinstance(data, dict)
    return data


def batch(client: TestClient, object_type: str, objects: list[Any]) -> dict[str, Any]:
    response = client.post(f"/api/objects/{object_type}/batch", json={"objects": objects})
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, dict)
    return body


def delete(client: TestClient, object_type: str, record_id: int) -> None:
    response = client.request("DELETE", f"/api/objects/{object_type}", json={"id": record_id})
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True}

"""Shared constants and request helpers of the sandbox tests."""

from __future__ import annotations

import warnings
from typing import Any

with warnings.catch_warnings():
    # starlette 1.x warns at import when the TestClient runs on httpx rather than httpx2
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

__all__ = ["TestClient"]

KEY = "sk_live_test_0123456789"
H = {"x-api-key": KEY}
CUSTOMERS_VIEW = "7a1e0c52-0001-4000-8000-000000000001"
LIVE_SKILL = "00000000-0000-4000-8000-000000000001"
PAUSED_SKILL = "00000000-0000-4000-8000-000000000002"
ADA = "6f1c2a3b-0001-4000-8000-000000000001"


def put(client: TestClient, object_type: str, name: str | None, **fields: Any) -> Any:
    body: dict[str, Any] = {"fields": fields}
    if name is not None:
        body["name"] = name
    return client.put(f"/api/objects/{object_type}", json=body)


def created(client: TestClient, object_type: str, name: str, **fields: Any) -> dict[str, Any]:
    r = put(client, object_type, name, **fields)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()["data"]
    return data


def delete(client: TestClient, object_type: str, body: Any) -> Any:
    return client.request("DELETE", f"/api/objects/{object_type}", json=body)


def batch(client: TestClient, object_type: str, objects: list[Any]) -> Any:
    return client.post(f"/api/objects/{object_type}/batch", json={"objects": objects})

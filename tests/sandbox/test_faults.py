"""Fault injection: spec parsing, deterministic counters, and each fault as the client sees it."""

from __future__ import annotations

import warnings
from pathlib import Path

import httpx
import pytest

from recordsync.core.errors import ConfigError
from recordsync.sandbox import create_app
from recordsync.sandbox.faults import FaultSpec, parse_fault_spec, wrap_with_faults
from recordsync.sandbox.server import run_in_thread

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

KEY = "sk_live_fault_tests_0123456789"
H = {"x-api-key": KEY}
BATCH = "/api/objects/deals/batch"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("latency:50ms", FaultSpec("latency", "latency:50ms", delay_s=0.05)),
        (
            "latency:0.2s:every=2",
            FaultSpec("latency", "latency:0.2s:every=2", delay_s=0.2, every=2),
        ),
        ("status:503:every=5", FaultSpec("status", "status:503:every=5", status=503, every=5)),
        (
            "429:every=7:retry_after=1",
            FaultSpec("status", "429:every=7:retry_after=1", status=429, every=7, retry_after="1"),
        ),
        (
            "drop-after-apply:every=4:path=/batch",
            FaultSpec(
                "drop-after-apply", "drop-after-apply:every=4:path=/batch", every=4, path="/batch"
            ),
        ),
        ("drop:after=3", FaultSpec("drop", "drop:after=3", after=3)),
    ],
)
def test_parse(text: str, expected: FaultSpec) -> None:
    assert parse_fault_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty spec"),
        ("explode", "unknown fault kind 'explode'"),
        ("status", "status needs a code"),
        ("status:99", "not an HTTP status code"),
        ("latency:fast", "not a duration"),
        ("503:every=0", "every='0' must be an integer >= 1"),
        ("503:often", "is not key=value"),
        ("503:colour=red", "unknown option"),
        ("drop:retry_after=1", "retry_after only applies"),
        ("503:every=2:every=3", "given twice"),
    ],
)
def test_bad_specs_name_the_spec_and_the_valid_forms(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_fault_spec(text)
    assert why in str(info.value)
    assert repr(text) in str(info.value) and "valid forms" in str(info.value)


def test_no_specs_leaves_the_app_alone() -> None:
    app = object()
    assert wrap_with_faults(app, []) is app and wrap_with_faults(app, None) is app


def batch(client: TestClient, n: int) -> httpx.Response:
    return client.post(
        BATCH, json={"objects": [{"name": f"D{n}", "fields": {"stage": "won"}}]}, headers=H
    )


def test_status_every_nth_matching_request_is_deterministic(tmp_path: Path) -> None:
    app = create_app(
        tmp_path / "s.db",
        api_key=KEY,
        faults=["status:503:every=3:path=/batch", "429:every=4:retry_after=2"],
    )
    codes: list[int] = []
    with TestClient(app) as client:
        for i in range(8):
            r = batch(client, i)
            codes.append(r.status_code)
            if r.status_code == 429:
                assert r.headers["retry-after"] == "2"
            if r.status_code >= 400:
                assert "Injected fault" in r.json()["error"]
        client.get("/api/meta/users", headers=H)  # not /batch: counted by the 429 spec only
        listed = client.get("/api/objects/deals", headers=H).json()["pagination"]["total"]
    app.state.store.close()
    assert codes == [200, 200, 503, 429, 200, 503, 200, 429]
    assert listed == 4  # faulted requests were never applied


def test_latency_delays_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("recordsync.sandbox.faults.asyncio.sleep", fake_sleep)
    app = create_app(tmp_path / "s.db", api_key=KEY, faults=["latency:30ms:every=2"])
    with TestClient(app) as client:
        codes = [client.get("/api/meta/users", headers=H).status_code for _ in range(4)]
    app.state.store.close()
    assert codes == [200] * 4 and slept == [0.03, 0.03]


def test_drop_after_apply_over_loopback(tmp_path: Path) -> None:
    app = create_app(
        tmp_path / "s.db", api_key=KEY, faults=["drop-after-apply:every=2:path=/batch"]
    )
    outcomes: list[str] = []
    with run_in_thread(app) as url, httpx.Client(base_url=url, headers=H) as client:
        for i in range(4):
            try:
                outcomes.append(
                    str(
                        client.post(
                            BATCH, json={"objects": [{"name": f"D{i}", "fields": {"stage": "won"}}]}
                        ).status_code
                    )
                )
            except httpx.RemoteProtocolError:
                outcomes.append("dropped")
        total = client.get("/api/objects/deals").json()["pagination"]["total"]
    app.state.store.close()
    assert outcomes == ["200", "dropped", "200", "dropped"]
    assert total == 4  # the dropped requests were applied


def test_drop_before_apply_over_loopback(tmp_path: Path) -> None:
    app = create_app(tmp_path / "s.db", api_key=KEY, faults=["drop:every=2:path=/batch"])
    with run_in_thread(app) as url, httpx.Client(base_url=url, headers=H) as client:
        client.post(BATCH, json={"objects": [{"name": "A", "fields": {"stage": "won"}}]})
        # a dropped connection: "disconnected without a response", or, depending on timing,
        # a reset while the request is still being written or the answer read
        dropped = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
        with pytest.raises(dropped):
            client.post(BATCH, json={"objects": [{"name": "B", "fields": {"stage": "won"}}]})
        total = client.get("/api/objects/deals").json()["pagination"]["total"]
    app.state.store.close()
    assert total == 1

"""The ``skew`` fault: the sandbox's ``Date`` header and record stamps moved off its clock,
black-box over a loopback socket (uvicorn's own Date header must not appear beside it)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from recordsync.core.errors import ConfigError
from recordsync.sandbox import create_app
from recordsync.sandbox.faults import FaultSpec, parse_fault_spec
from recordsync.sandbox.server import run_in_thread

KEY = "sk_live_fault_skew_0123456789"
H = {"x-api-key": KEY}
ONE = {"objects": [{"name": "A", "fields": {"stage": "won"}}]}


@pytest.mark.parametrize(
    ("text", "date", "stamps"),
    [
        ("skew:date=+2s", 2.0, 0.0),
        ("skew:date=-30s", -30.0, 0.0),
        ("skew:stamps=-30s", None, -30.0),
        ("skew:date=1s:stamps=500", 1.0, 0.5),
        ("skew:date=0s", 0.0, 0.0),
    ],
)
def test_parse_skew(text: str, date: float | None, stamps: float) -> None:
    assert parse_fault_spec(text) == FaultSpec(
        kind="skew", text=text, date_offset_s=date, stamp_offset_s=stamps
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("skew", "skew needs date=<offset> and/or stamps=<offset>"),
        ("skew:date=soon", "date='soon' is not an offset like +2s, -30s or 500ms"),
        ("skew:stamps=--1s", "stamps='--1s' is not an offset"),
        ("skew:date=1s:every=2", "option(s) every do not apply to a skew"),
        ("skew:hour=1", "option(s) hour do not apply to a skew"),
    ],
)
def test_bad_skews_say_why(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match="invalid fault spec") as caught:
        parse_fault_spec(text)
    assert why in str(caught.value)
    assert "skew:date=" in (caught.value.hint or "")


@contextmanager
def serve(tmp_path: Path, *faults: str) -> Iterator[httpx.Client]:
    app = create_app(tmp_path / "s.db", api_key=KEY, faults=list(faults))
    try:
        with run_in_thread(app) as url, httpx.Client(base_url=url, headers=H) as http:
            yield http
    finally:
        app.state.store.close()


def dates(response: httpx.Response) -> list[float]:
    values = response.headers.get_list("date")
    return [email.utils.parsedate_to_datetime(v).timestamp() for v in values]


@pytest.mark.parametrize("offset", [-30.0, 2.0, 30.0])
def test_the_date_header_is_moved_on_every_answer(tmp_path: Path, offset: float) -> None:
    with serve(tmp_path, f"skew:date={offset:+.0f}s") as http:
        before = time.time()
        paths = ["/api/objects/deals", "/api/nope", "/openapi.json"]
        answers = [http.get(path) for path in paths]
        after = time.time()
    for answer in answers:
        (date,) = dates(answer)  # one header: the server's own is off
        # the header has whole seconds: it lies within a second of the moved clock
        assert before + offset - 1 <= date <= after + offset


def test_without_a_date_skew_the_server_dates_its_answers(tmp_path: Path) -> None:
    with serve(tmp_path, "skew:stamps=-30s") as http:
        before = time.time()
        (date,) = dates(http.get("/api/objects/deals"))
    assert before - 2 <= date <= time.time()  # uvicorn's, refreshed once a second


def stamps(record: dict[str, str]) -> tuple[float, float]:
    created = datetime.fromisoformat(record["created_at"]).timestamp()
    return created, datetime.fromisoformat(record["updated_at"]).timestamp()


@pytest.mark.parametrize("offset", [-30.0, 30.0])
def test_records_are_stamped_off_the_clock(tmp_path: Path, offset: float) -> None:
    with serve(tmp_path, f"skew:stamps={offset:+.0f}s") as http:
        before = time.time()
        created = http.post("/api/objects/deals/batch", json=ONE)
        rid = created.json()["results"][0]["id"]
        http.patch("/api/objects/deals", json={"id": rid, "name": "B"})
        record = http.get("/api/objects/deals", params={"id": rid}).json()["data"]
        after = time.time()
        (date,) = dates(created)
    made, changed = stamps(record)
    assert before + offset - 0.01 <= made <= changed <= after + offset  # stamps have ms
    assert before - 2 <= date <= after  # uvicorn's (refreshed once a second), not moved


def test_no_skew_leaves_the_clocks_alone(tmp_path: Path) -> None:
    with serve(tmp_path) as http:
        before = time.time()
        answer = http.post("/api/objects/deals/batch", json=ONE)
        rid = answer.json()["results"][0]["id"]
        record = http.get("/api/objects/deals", params={"id": rid}).json()["data"]
        after = time.time()
    (date,) = dates(answer)
    assert before - 2 <= date <= after
    assert before - 0.01 <= stamps(record)[0] <= after

"""The after-apply fault modes and the HTML error page, black-box over a loopback socket."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from recordsync.core.errors import ConfigError
from recordsync.sandbox import create_app
from recordsync.sandbox.faults import FaultSpec, parse_fault_spec
from recordsync.sandbox.server import run_in_thread

KEY = "sk_live_fault_after_apply_0123"
H = {"x-api-key": KEY}
BATCH = "/api/objects/deals/batch"


@contextmanager
def serve(tmp_path: Path, *faults: str) -> Iterator[httpx.Client]:
    app = create_app(tmp_path / "s.db", api_key=KEY, faults=list(faults))
    try:
        with run_in_thread(app) as url, httpx.Client(base_url=url, headers=H) as http:
            yield http
    finally:
        app.state.store.close()


def deal(name: str) -> dict[str, object]:
    return {"objects": [{"name": name, "fields": {"stage": "won"}}]}


def names(http: httpx.Client) -> list[str]:
    return [r["name"] for r in http.get("/api/objects/deals").json()["data"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("status-after-apply:502", FaultSpec("status-after-apply", "status-after-apply:502", 502)),
        ("html:504:every=3", FaultSpec("html", "html:504:every=3", 504, every=3)),
        (
            "html-after-apply:502:path=/batch",
            FaultSpec("html-after-apply", "html-after-apply:502:path=/batch", 502, path="/batch"),
        ),
        (
            "timeout-after-apply:after=2",
            FaultSpec("timeout-after-apply", "timeout-after-apply:after=2", after=2),
        ),
    ],
)
def test_parse_the_new_kinds(text: str, expected: FaultSpec) -> None:
    assert parse_fault_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("html", "html needs a code"),
        ("status-after-apply:every=2", "status-after-apply needs a code"),
        ("html:502:retry_after=1", "retry_after only applies to a status fault"),
    ],
)
def test_bad_new_specs_name_the_problem(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parse_fault_spec(text)


def test_status_after_apply_writes_then_answers_the_error(tmp_path: Path) -> None:
    with serve(tmp_path, "status-after-apply:502:every=2:path=/batch") as http:
        assert http.post(BATCH, json=deal("first")).status_code == 200
        second = http.post(BATCH, json=deal("second"))
        assert second.status_code == 502
        assert second.headers["content-type"] == "application/json"
        assert "Injected fault" in second.json()["error"]
        assert sorted(names(http)) == ["first", "second"]  # the 502'd batch was applied


def test_html_error_page_is_not_applied(tmp_path: Path) -> None:
    with serve(tmp_path, "html:502:path=/batch") as http:
        answer = http.post(BATCH, json=deal("lost"))
        assert answer.status_code == 502
        assert answer.headers["content-type"] == "text/html"
        assert "<title>502 Bad Gateway</title>" in answer.text
        assert names(http) == []


def test_html_after_apply_writes_then_answers_the_page(tmp_path: Path) -> None:
    with serve(tmp_path, "html-after-apply:504:path=/batch:after=1") as http:
        assert http.post(BATCH, json=deal("one")).status_code == 200
        answer = http.post(BATCH, json=deal("two"))
        assert answer.status_code == 504
        assert "<h1>504 Gateway Time-out</h1>" in answer.text
        assert sorted(names(http)) == ["one", "two"]


def test_timeout_after_apply_never_answers_but_writes(tmp_path: Path) -> None:
    # the server never answers this request at all, so the short read timeout always fires;
    # the read-back below waits (in the sandbox) until the write is done: no race
    with serve(tmp_path, "timeout-after-apply:path=/batch") as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post(BATCH, json=deal("late"), timeout=httpx.Timeout(10.0, read=0.3))
        assert names(http) == ["late"]
        # every matching request hangs; the others are answered
        assert http.get("/api/meta/schema").status_code == 200

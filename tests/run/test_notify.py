"""Webhook delivery on its own: the signature (a round trip with hypothesis), the Slack
shape, an unreachable webhook (no raise, no URL in the log), and retries bounded by
``tries`` against a real local receiver."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config.unattended import NotifySettings
from recordsync.core.secret import Secret
from recordsync.run import notify
from recordsync.run.notify import RAISED, RESOLVED, body_of, deliver, sign, slack_body

from .receiver import receiver

MSG: dict[str, Any] = {
    "event": RAISED,
    "run_id": "20261129T020000Z-crm-ab12",
    "pipeline": "crm",
    "target": "https://crm.example",
    "exit_code": 1,
    "conditions": [{"id": "rows_not_ok", "reason": "3 of 100 rows not ok (3.0%)"}],
    "resolved": [],
    "counts": {
        "rows_read": 100,
        "created": 2,
        "updated": 5,
        "rows_unchanged": 90,
        "rows_not_ok": 3,
    },
    "report": "/data/reports/20261129T020000Z-crm-ab12",
    "top_reasons": [{"reason": "email: not a valid e-mail address", "rows": 3}],
}


@given(st.binary(max_size=2000), st.text(min_size=1, max_size=64))
def test_the_signature_is_the_hmac_of_the_raw_body(body: bytes, secret: str) -> None:
    header = sign(body, Secret(secret))
    want = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(header, f"sha256={want}")
    assert sign(body + b"x", Secret(secret)) != header


def test_the_slack_shape_has_text_and_blocks() -> None:
    body = slack_body(MSG)
    assert body["text"].startswith(":rotating_light: recordsync crm: rows_not_ok")
    assert "3 of 100 rows not ok" in body["text"]
    blob = json.dumps(body["blocks"], ensure_ascii=False)
    assert "*not ok* 3" in blob and "3 × email: not a valid e-mail address" in blob
    assert MSG["report"] in blob and MSG["run_id"] in blob
    done = slack_body({**MSG, "event": RESOLVED, "conditions": [], "resolved": ["rows_not_ok"]})
    assert done["text"].startswith(":white_check_mark: recordsync crm: resolved")
    settings = NotifySettings.model_validate({"webhooks": [{"url_env": "X"}]})
    assert json.loads(body_of(settings.webhooks[0], MSG)) == MSG  # generic: the message


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_webhook_is_logged_without_its_url(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(notify, "_PAUSES", (0.0,))
    caplog.set_level(logging.DEBUG)
    url = f"http://127.0.0.1:{_closed_port()}/services/SECRETTOKEN"
    settings = NotifySettings.model_validate(
        {"webhooks": [{"url_env": "HOOK", "secret_env": "SIG"}], "tries": 2, "timeout": 5}
    )
    [d] = deliver(settings, MSG, {"HOOK": url, "SIG": "sig-secret-123"})
    assert (d.webhook, d.delivered, d.tries) == ("HOOK", False, 2)
    assert "ConnectError" in d.detail
    assert "attempt 2 of 2 failed" in caplog.text
    for text in (caplog.text, d.detail, repr(d), repr(settings)):
        assert "SECRETTOKEN" not in text and "sig-secret-123" not in text


def test_tries_are_bounded_and_a_4xx_is_not_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify, "_PAUSES", (0.0,))
    settings = NotifySettings.model_validate({"webhooks": [{"url_env": "HOOK"}], "tries": 3})
    with receiver(answers=[500, 500, 500, 500]) as hook:
        [d] = deliver(settings, MSG, {"HOOK": hook.url})
        tried = len(hook.requests)
    assert (d.delivered, d.tries, d.detail, tried) == (False, 3, "HTTP 500", 3)
    with receiver(answers=[404]) as hook:
        [d] = deliver(settings, MSG, {"HOOK": hook.url})
        tried = len(hook.requests)
    assert (d.delivered, d.tries, d.detail, tried) == (False, 1, "HTTP 404", 1)
    with receiver(answers=[429]) as hook:
        [d] = deliver(settings, MSG, {"HOOK": hook.url})
        tried = len(hook.requests)
    assert (d.delivered, d.tries, tried) == (True, 2, 2)

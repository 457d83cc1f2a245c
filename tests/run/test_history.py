"""The end of a run against the sandbox over loopback: its history record, the alert its
change of state sends to a real local webhook receiver (once per change, one "resolved"),
signed, and a webhook that fails never changing the run's outcome."""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import KEY, served, target

from recordsync.core.errors import ConfigError
from recordsync.run import notify
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.send.retry import RetryPolicy
from recordsync.state import StateStore
from recordsync.state.history import RunHistory

from .receiver import receiver

SECRET = "whsec_test_0123456789abcdef"
TOKEN = "T000/B000/XXXXsecretpathXXXX"


def people(tmp: Path, rows: list[tuple[str, str]]) -> None:
    with open(tmp / "m.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Email"])
        w.writerows(rows)


GOOD = [(f"P{i}", f"p{i}@h.example") for i in range(5)]
BAD = [*GOOD[:4], ("P4", "not-an-email")]


def pipeline(tmp: Path, notify_yaml: str) -> Path:
    (tmp / "m.yaml").write_text(
        "object_type: contacts\nsource: {path: m.csv}\nname: Name\nmatch_by: [email]\n"
        "fields: {email: Email}\n",
        encoding="utf-8",
    )
    path = tmp / "alerts.yaml"
    path.write_text(f"name: alerts\nsteps: [m.yaml]\n{notify_yaml}", encoding="utf-8")
    return path


def run(tmp: Path, path: Path, url: str, env: dict[str, str], **kw: Any) -> Any:
    request = RunRequest(
        path,
        report_dir=tmp / "reports",
        state_db=tmp / "state.db",
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        env=env,
        **kw,
    )
    return run_pipeline(request, target=target(url))


GENERIC = (
    "notify:\n  webhooks:\n    - {url_env: RS_HOOK, secret_env: RS_SECRET, name: ops}\n"
    "  alert_on: {rows_not_ok: 0}\n"
)


def test_an_alert_is_sent_once_when_raised_and_once_when_resolved(tmp_path: Path) -> None:
    path = pipeline(tmp_path, GENERIC)
    with receiver() as hook, served(tmp_path / "s.db") as url:
        env = {"RS_HOOK": f"{hook.url}/hooks/{TOKEN}", "RS_SECRET": SECRET}
        people(tmp_path, GOOD)
        healthy = run(tmp_path, path, url, env)
        people(tmp_path, BAD)
        bad = [run(tmp_path, path, url, env) for _ in range(2)]
        people(tmp_path, GOOD)
        fixed = run(tmp_path, path, url, env)
        again = run(tmp_path, path, url, env)
        requests = list(hook.requests)
    assert [r.exit_code for r in (healthy, *bad, fixed, again)] == [0, 1, 1, 0, 0]
    assert len(requests) == 2  # raised once (not once per bad run), resolved once
    raised, resolved = requests
    for r in requests:
        assert r.path == f"/hooks/{TOKEN}"
        want = hmac.new(SECRET.encode(), r.body, hashlib.sha256).hexdigest()
        assert r.headers["X-Recordsync-Signature"] == f"sha256={want}"
    msg = raised.json()
    assert raised.headers["X-Recordsync-Event"] == msg["event"] == "alert_raised"
    assert msg["run_id"] == bad[0].summary["run_id"]
    assert (msg["pipeline"], msg["target"], msg["exit_code"]) == ("alerts", url, 1)
    assert [c["id"] for c in msg["conditions"]] == ["rows_not_ok"]
    assert "1 of 5 rows not ok" in msg["conditions"][0]["reason"]
    assert msg["counts"]["rows_read"] == 5 and msg["counts"]["rows_not_ok"] == 1
    assert msg["report"] == str(bad[0].report_dir) and Path(msg["report"]).is_dir()
    [reason] = msg["top_reasons"]
    assert reason["rows"] == 1 and "email" in reason["reason"]
    done = resolved.json()
    assert done["event"] == "alert_resolved" and done["run_id"] == fixed.summary["run_id"]
    assert done["conditions"] == [] and done["resolved"] == ["rows_not_ok"]
    with StateStore(tmp_path / "state.db") as store:
        records = RunHistory(store).runs("alerts")
    assert [r.run_id for r in records] == [
        x.summary["run_id"] for x in (again, fixed, bad[1], bad[0], healthy)
    ]
    assert [r.alerted for r in records] == [[], [], ["rows_not_ok"], ["rows_not_ok"], []]
    assert records[3].steps[0]["rows_read"] == 5 and records[3].exit_code == 1


SLACK = (
    "notify:\n  webhooks: [{url_env: RS_SLACK, shape: slack}]\n"
    "  alert_on: {rows_not_ok: 50%, runtime_over: 0}\n"
)


def test_a_slack_shaped_alert_for_a_run_over_its_runtime_limit(tmp_path: Path) -> None:
    path = pipeline(tmp_path, SLACK)
    with receiver() as hook, served(tmp_path / "s.db") as url:
        people(tmp_path, BAD)  # 1 of 5 rows not ok: under 50%, no alert for it
        first = run(tmp_path, path, url, {"RS_SLACK": hook.url})
        second = run(tmp_path, path, url, {"RS_SLACK": hook.url})
        requests = list(hook.requests)
    assert first.exit_code == second.exit_code == 1
    [only] = requests  # the second run is as slow: no change, no message
    assert "X-Recordsync-Signature" not in only.headers  # no secret_env: unsigned
    body = only.json()
    assert set(body) == {"text", "blocks"}
    assert body["text"].startswith(":rotating_light: recordsync alerts: runtime")
    assert "above alert_on.runtime_over 0 s" in body["text"]
    kinds = [b["type"] for b in body["blocks"]]
    assert kinds[0] == "header" and kinds[-1] == "context" and "section" in kinds
    context = body["blocks"][-1]["elements"][0]["text"]
    assert first.summary["run_id"] in context and str(first.report_dir) in context


def test_a_failing_webhook_is_retried_logged_and_never_changes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(notify, "_PAUSES", (0.0,))
    caplog.set_level(logging.DEBUG)
    path = pipeline(tmp_path, GENERIC)
    with receiver(answers=[500, 503, 502, 500, 200]) as hook, served(tmp_path / "s.db") as url:
        env = {"RS_HOOK": f"{hook.url}/hooks/{TOKEN}", "RS_SECRET": SECRET}
        people(tmp_path, BAD)
        failed = run(tmp_path, path, url, env)  # 3 tries, all answered 5xx
        retried = run(tmp_path, path, url, env)  # not told yet: sent again (500, then 200)
        quiet = run(tmp_path, path, url, env)
        requests = list(hook.requests)
    assert [r.exit_code for r in (failed, retried, quiet)] == [1, 1, 1]
    assert len(requests) == 5
    assert {r.json()["event"] for r in requests} == {"alert_raised"}
    assert [r.json()["run_id"] for r in requests] == [failed.summary["run_id"]] * 3 + [
        retried.summary["run_id"]
    ] * 2
    assert "attempt 3 of 3 answered HTTP 502" in caplog.text
    assert "not delivered to webhook ops" in caplog.text
    # the webhook's URL (its path holds a token) and the secret are never shown
    shown = [caplog.text]
    for result in (failed, retried, quiet):
        shown += [p.read_text(encoding="utf-8") for p in result.report_dir.iterdir() if p.is_file()]
    with StateStore(tmp_path / "state.db") as store:
        shown += [json.dumps(r.as_json()) for r in RunHistory(store).runs()]
        shown += [repr(r) for r in RunHistory(store).runs()]
    for text in shown:
        assert TOKEN not in text and SECRET not in text and KEY not in text


def test_a_webhook_variable_not_set_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    path = pipeline(tmp_path, GENERIC)
    with served(tmp_path / "s.db") as url:
        people(tmp_path, BAD)
        result = run(tmp_path, path, url, {})
    assert result.exit_code == 1
    warnings = result.summary["warnings"]
    assert any("environment variable RS_HOOK is not set" in w for w in warnings)
    assert any("environment variable RS_SECRET is not set" in w for w in warnings)
    with StateStore(tmp_path / "state.db") as store:
        [record] = RunHistory(store).runs("alerts")
    assert record.alerted == []  # nobody was told: the next run with the variable tells


def test_a_run_that_cannot_reach_the_service_alerts_failed(tmp_path: Path) -> None:
    path = pipeline(tmp_path, GENERIC)
    with receiver() as hook, served(tmp_path / "s.db") as url:
        env = {"RS_HOOK": hook.url, "RS_SECRET": SECRET}
        people(tmp_path, GOOD)
        healthy = run(tmp_path, path, url, env)
        request = RunRequest(
            path,
            report_dir=tmp_path / "reports",
            state_db=tmp_path / "state.db",
            retry=RetryPolicy(sleep=lambda s: None, max_attempts=1),
            env=env,
        )
        wrong = run_pipeline(request, target=target(url, key="sk_live_wrong_key_000000000000"))
        requests = list(hook.requests)
    assert healthy.exit_code == 0 and wrong.exit_code == 3
    [msg] = [r.json() for r in requests]
    ids = [c["id"] for c in msg["conditions"]]  # every row was reported not sent, too
    assert msg["event"] == "alert_raised" and ids == ["failed", "rows_not_ok"]
    assert msg["run_id"] == wrong.summary["run_id"] and "exit 3" in msg["conditions"][0]["reason"]
    assert "sk_live_wrong_key" not in json.dumps(msg)


def test_a_profile_carries_the_alerts_of_its_target(tmp_path: Path) -> None:
    path = pipeline(tmp_path, "")  # no notify: of its own
    with receiver() as hook, served(tmp_path / "s.db") as url:
        profiles = tmp_path / "profiles.yaml"
        profiles.write_text(
            f"profiles:\n  prod:\n    base_url: {url}\n    api_key_env: PROD_KEY\n"
            "    notify:\n      webhooks: [{url_env: PROD_HOOK, shape: slack}]\n",
            encoding="utf-8",
        )
        env = {"RECORDSYNC_PROFILES": str(profiles), "PROD_KEY": KEY, "PROD_HOOK": hook.url}
        people(tmp_path, BAD)
        request = RunRequest(
            path,
            profile="prod",
            report_dir=tmp_path / "reports",
            state_db=tmp_path / "state.db",
            retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
            env=env,
        )
        result = run_pipeline(request)
        requests = list(hook.requests)
        profiles.write_text(
            f"profiles:\n  prod:\n    base_url: {url}\n    api_key_env: PROD_KEY\n"
            f"    notify:\n      webhooks: [{{url: '{hook.url}'}}]\n",
            encoding="utf-8",
        )
        with pytest.raises(ConfigError) as err:
            run_pipeline(request)
    assert result.exit_code == 1
    [only] = requests
    assert only.json()["text"].startswith(":rotating_light: recordsync alerts: rows_not_ok")
    assert err.value.key == "prod.notify.webhooks.0" and "url_env" in str(err.value)
    assert hook.url not in str(err.value)

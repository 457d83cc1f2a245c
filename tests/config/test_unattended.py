"""The settings of unattended runs in pipeline and mapping files: ``notify:`` (webhook URLs
and secrets only by the names of environment variables), ``history:`` and ``volume_guard:``,
each refused with the file, the key and what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordsync.config import load_mapping, load_pipeline
from recordsync.config.unattended import AlertOn, seconds, share
from recordsync.core.errors import ConfigError

MAPPING = "object_type: contacts\nsource: {path: m.csv}\nname: Name\n"
HOOK_URL = "https://hooks.example.com/services/T000/B000/XXXXsecretXXXX"


def pipeline(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "m.yaml").write_text(MAPPING, encoding="utf-8")
    path = tmp_path / "p.yaml"
    path.write_text("steps: [m.yaml]\n" + extra, encoding="utf-8")
    return path


def test_a_notify_section_loads_with_its_defaults(tmp_path: Path) -> None:
    p = load_pipeline(
        pipeline(
            tmp_path,
            "notify:\n  webhooks:\n    - {url_env: SLACK_URL, shape: slack}\n"
            "    - {url_env: OPS_URL, secret_env: OPS_SECRET}\n"
            "  alert_on: {rows_not_ok: 2%, runtime_over: 45m}\nhistory: {retention_days: 30}\n",
        )
    )
    assert p.notify is not None
    assert [(w.url_env, w.shape, w.secret_env) for w in p.notify.webhooks] == [
        ("SLACK_URL", "slack", None),
        ("OPS_URL", "generic", "OPS_SECRET"),
    ]
    assert p.notify.alert_on.runtime_over == 2700 and p.notify.tries == 3
    assert p.history.retention_days == 30
    bare = load_pipeline(pipeline(tmp_path, ""))
    assert bare.notify is None and bare.history.retention_days == 90


@pytest.mark.parametrize(
    ("extra", "key", "says"),
    [
        (
            f"notify:\n  webhooks: [{{url: '{HOOK_URL}'}}]\n",
            "notify.webhooks.0",
            "'url' is never written in a file: put it in an environment variable and name"
            " that variable with 'url_env'",
        ),
        (
            "notify:\n  webhooks: [{url_env: X, secret: hunter2}]\n",
            "notify.webhooks.0",
            "name that variable with 'secret_env'",
        ),
        (
            f"notify:\n  webhooks: [{{url_env: '{HOOK_URL}'}}]\n",
            "notify.webhooks.0.url_env",
            "url_env names an environment variable",
        ),
        ("notify:\n  webhooks: []\n", "notify.webhooks", "at least 1"),
        (
            "notify:\n  webhooks: [{url_env: X, shape: teams}]\n",
            "notify.webhooks.0.shape",
            "'generic' or 'slack'",
        ),
        (
            "notify:\n  webhooks: [{url_env: X}]\n  alert_on: {rows_not_ok: lots}\n",
            "notify.alert_on.rows_not_ok",
            "rows_not_ok is a share",
        ),
        (
            "notify:\n  webhooks: [{url_env: X}]\n  alert_on: {runtime_over: soon}\n",
            "notify.alert_on.runtime_over",
            "runtime_over is a duration: write 1800, 30m or 2h",
        ),
        ("history: {retention_days: 0}\n", "history.retention_days", "greater than or equal"),
    ],
)
def test_bad_notify_and_history_settings_name_the_key(
    tmp_path: Path, extra: str, key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_pipeline(pipeline(tmp_path, extra))
    text = str(err.value)
    assert err.value.key == key and says in text and "p.yaml" in text
    assert HOOK_URL not in text and "hunter2" not in text  # a secret written by mistake


def test_a_mapping_volume_guard_loads_and_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MAPPING + "volume_guard: {max_drop: 20%, on_drop: skip_step}\n", "utf-8")
    guard = load_mapping(path).volume_guard
    assert (guard.enabled, guard.drop, guard.on_drop) == (True, 0.2, "skip_step")
    path.write_text(MAPPING, "utf-8")
    default = load_mapping(path).volume_guard
    assert (default.enabled, default.drop, default.on_drop) == (True, 0.5, "skip_deletes")
    path.write_text(MAPPING + "volume_guard: {max_drop: -5%}\n", "utf-8")
    with pytest.raises(ConfigError) as err:
        load_mapping(path)
    assert err.value.key == "volume_guard.max_drop" and "between 0% and 100%" in str(err.value)


def test_shares_durations_and_the_rows_threshold() -> None:
    assert share("50%", what="x") == 0.5 and share(0.25, what="x") == 0.25
    assert seconds("2h", what="x") == 7200 and seconds(90, what="x") == 90
    assert seconds("1.5m", what="x") == 90
    assert AlertOn().rows_not_ok_over(1, 100) and not AlertOn().rows_not_ok_over(0, 100)
    share_limit = AlertOn(rows_not_ok="2%")
    assert not share_limit.rows_not_ok_over(2, 100) and share_limit.rows_not_ok_over(3, 100)
    assert not AlertOn(rows_not_ok=None).rows_not_ok_over(10**6, 1)
    assert not AlertOn(rows_not_ok=5).rows_not_ok_over(5, 10)

"""Target precedence: --base-url > --profile > RECORDSYNC_BASE_URL > RECORDSYNC_PROFILE >
pipeline target > embedded sandbox; keys only from env, never from files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.support import BOMB

from recordsync.core.errors import AuthError, ConfigError
from recordsync.run.target import choose_target, open_target, resolve_key


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "staging:\n  base_url: https://staging.example/\n  api_key_env: STAGING_KEY\n"
        "prod:\n  base_url: https://prod.example\n"
    )
    return path


def choose(profiles: Path, env: dict[str, str] | None = None, **kw: str | None):  # type: ignore[no-untyped-def]
    return choose_target(env=env or {}, profiles_path=profiles, **kw)


def test_flag_beats_everything(profiles: Path) -> None:
    env = {"RECORDSYNC_BASE_URL": "https://env.example", "RECORDSYNC_PROFILE": "prod"}
    c = choose(profiles, env, base_url="https://flag.example/", profile="staging")
    assert (c.base_url, c.key_env, c.origin) == (
        "https://flag.example",
        "RECORDSYNC_API_KEY",
        "--base-url",
    )


def test_profile_flag_beats_env_and_uses_its_own_key_variable(profiles: Path) -> None:
    c = choose(profiles, {"RECORDSYNC_BASE_URL": "https://env.example"}, profile="staging")
    assert (c.base_url, c.key_env) == ("https://staging.example", "STAGING_KEY")


def test_env_beats_env_profile_and_pipeline_target(profiles: Path) -> None:
    env = {"RECORDSYNC_BASE_URL": "https://env.example", "RECORDSYNC_PROFILE": "prod"}
    assert choose(profiles, env, pipeline_target="staging").base_url == "https://env.example"
    assert (
        choose(profiles, {"RECORDSYNC_PROFILE": "prod"}, pipeline_target="staging").base_url
        == "https://prod.example"
    )
    assert choose(profiles, {}, pipeline_target="staging").base_url == "https://staging.example"


def test_nothing_or_the_sandbox_profile_is_the_embedded_sandbox(profiles: Path) -> None:
    assert choose(profiles).base_url is None
    assert choose(profiles, pipeline_target="sandbox").base_url is None


def test_profile_key_never_falls_back_to_the_default_variable(profiles: Path) -> None:
    c = choose(profiles, profile="staging")
    with pytest.raises(AuthError, match="STAGING_KEY"):
        resolve_key(c, {"RECORDSYNC_API_KEY": "sk_live_prod"})
    assert resolve_key(c, {"STAGING_KEY": "sk_live_stage"}).reveal() == "sk_live_stage"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x:\n  base_url: https://a\n  api_key: sk_live_oops\n", "API keys never go in files"),
        ("x:\n  base_url: https://a\n  colour: red\n", "unknown key"),
        ("x:\n  api_key_env: K\n", "base_url is required"),
        ("x: [1\n", "invalid YAML"),
        (BOMB, "refused as an alias bomb"),
    ],
)
def test_bad_profile_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        choose_target(env={}, profiles_path=path, profile="x")
    assert "sk_live_oops" not in str(info.value)


@pytest.mark.parametrize(
    "url", ["ftp://x", "crm.example", "https://user:pw@crm.example", "http://[::1"]
)
def test_bad_urls(profiles: Path, url: str) -> None:
    with pytest.raises(ConfigError, match="base URL"):
        choose(profiles, base_url=url)


def test_embedded_sandbox_serves_on_loopback_with_a_generated_key(tmp_path: Path) -> None:
    import httpx

    c = choose(tmp_path / "none.yaml")
    with open_target(c, env={}, sandbox_db=tmp_path / "sb" / "sandbox.db") as t:
        assert t.embedded and t.base_url.startswith("http://127.0.0.1:")
        assert t.api_key.reveal().startswith("sk_live_") and "sk_live_" not in repr(t)
        r = httpx.get(t.base_url + "/api/meta/users", headers={"x-api-key": t.api_key.reveal()})
        assert r.status_code == 200
    assert (tmp_path / "sb" / "sandbox.db").is_file()


@pytest.mark.parametrize(
    "url",
    [
        "https://crm.example/?api_key=sk_live_leak",
        "https://crm.example#sk_live_leak",
        "https://me:sk_live_leak@crm.example",
        "ftp://me:sk_live_leak@crm.example/?q=sk_live_leak",
    ],
)
def test_bad_urls_never_echo_a_query_or_credentials(profiles: Path, url: str) -> None:
    for kw in ({"base_url": url}, {"env": {"RECORDSYNC_BASE_URL": url}}):
        with pytest.raises(ConfigError, match="base URL") as info:
            choose(profiles, **kw)  # type: ignore[arg-type]
        assert "sk_live_leak" not in str(info.value)
        assert info.value.exit_code == 2


def test_redact_url() -> None:
    from recordsync.run.target import redact_url

    assert redact_url("https://u:p@h:8/x?api_key=k#f") == "https://***@h:8/x?***"
    assert redact_url("https://h/x") == "https://h/x"


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("sk_live_ab\ncd", "a line break"),
        ("sk_live_äbc", "a non-ASCII character"),
        ("sk_live_ab cd", "a space or control character"),
        ("sk_live_ab\x00", "a space or control character"),
        ("“sk_live_abcd”", "a non-ASCII character"),
    ],
)
def test_a_key_that_cannot_be_a_header_is_refused_without_echoing_it(
    profiles: Path, key: str, what: str
) -> None:
    c = choose(profiles, base_url="https://crm.example")
    with pytest.raises(ConfigError, match="cannot be sent as an HTTP header") as info:
        resolve_key(c, {"RECORDSYNC_API_KEY": key})
    text = str(info.value)
    assert what in text and "RECORDSYNC_API_KEY" in text and info.value.exit_code == 2
    assert "sk_live" not in text and "abcd" not in text and "äbc" not in text

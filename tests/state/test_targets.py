"""Which service a state belongs to (recordsync.state.targets): names, identity, binding."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.core.errors import ConfigError
from recordsync.state import StateStore
from recordsync.state.targets import (
    TargetIdentity,
    bind,
    keys_of,
    known_targets,
    normalize_url,
    pipeline_of,
    split_key,
    state_key,
)

USERS_A = [{"id": "u-1", "full_name": "Ada"}, {"id": "u-2", "full_name": "Ben"}]
USERS_B = [{"id": "u-9", "full_name": "Zoe"}]


@pytest.mark.parametrize(
    ("name", "normal"),
    [
        ("HTTPS://CRM.Example.com/", "https://crm.example.com"),
        ("https://crm.example.com:443/api/", "https://crm.example.com/api"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://127.0.0.1:8765/", "http://127.0.0.1:8765"),
        ("http://[::1]:8765", "http://[::1]:8765"),
    ],
)
def test_urls_are_compared_normalised(name: str, normal: str) -> None:
    assert normalize_url(name) == normal


def test_the_embedded_sandbox_is_named_by_its_absolute_database_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize_url("embedded-sandbox:.recordsync/sandbox.db") == (
        f"embedded-sandbox:{tmp_path.resolve()}/.recordsync/sandbox.db"
    )


@given(st.text(min_size=1).filter(lambda s: "\x1f" not in s), st.none() | st.integers(0, 10**9))
def test_a_state_key_splits_back_into_pipeline_and_target(name: str, tid: int | None) -> None:
    key = state_key(name, tid)
    assert pipeline_of(key) == name
    assert split_key(key) == (name, tid)


def test_a_plain_name_is_unbound_state() -> None:
    assert split_key("nightly") == ("nightly", None)


def _bind(store: StateStore, pipeline: str, url: str, users: list[dict[str, str]], **kw: object):
    with store.transaction() as conn:
        return bind(conn, pipeline, TargetIdentity.read(url, users), write=True, **kw)  # type: ignore[arg-type]


def test_one_url_and_overlapping_users_is_one_target(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db") as store:
        first = _bind(store, "p", "https://crm.example.com", USERS_A)
        store.scope_id(first.key, "m")  # the run wrote state there
        # a user joined and one left: the same organization
        again = _bind(store, "p", "https://CRM.example.com/", [USERS_A[1], *USERS_B])
        other_org = _bind(store, "p", "https://crm.example.com", [{"id": "u-7"}])
        other_url = _bind(store, "p", "http://127.0.0.1:8765", USERS_A)
        assert first.first_run and not again.first_run and again.key == first.key
        assert other_org.key != first.key and other_org.first_run
        assert other_url.key not in (first.key, other_org.key)
        assert other_url.others == ("https://crm.example.com",)
        assert other_url.note("p") is not None and "https://crm.example.com" in other_url.note("p")  # type: ignore[operator]
        assert len(known_targets(store.connection)) == 3


def test_a_dry_run_records_nothing(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db") as store:
        bound = bind(
            store.connection, "p", TargetIdentity.read("https://x.example", USERS_A), write=False
        )
        assert bound.target_id is None and bound.first_run
        assert known_targets(store.connection) == []


def test_unbound_state_is_refused_then_adopted_once(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db") as store:
        store.scope_id("p", "m")  # state of a recordsync that did not record targets
        with pytest.raises(ConfigError, match="--adopt-state") as refused:
            _bind(store, "p", "https://crm.example.com", USERS_A)
        assert "state reset p" in (refused.value.hint or "")
        bound = _bind(store, "p", "https://crm.example.com", USERS_A, adopt=True)
        assert not bound.first_run and keys_of(store.connection, "p") == {
            bound.target_id: bound.key
        }
        assert store.scope_id(bound.key, "m", create=False) is not None

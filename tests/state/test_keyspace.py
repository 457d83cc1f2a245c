"""One writer per key space (recordsync.state.keyspace): two pipelines sharing a mapping
cannot run at once against the same target (the second is refused naming the first, or
waits with --wait-for-lock), on SQLite state; pipelines writing other key spaces run side by
side. Runs are real, against the sandbox over HTTP; the "first run" is the lock held by the
test itself (as a run holds it), so every outcome is decided by the lock, not by timing."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.e2e.support import KEY, all_records, served, target

from recordsync.config import load_pipeline
from recordsync.core.errors import EXIT_ABORTED, RunAborted, exit_code_for
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.runner import RunResult
from recordsync.send.retry import RetryPolicy
from recordsync.state import PipelineLock, StateStore
from recordsync.state.keyspace import (
    LOCK_DIR_ENV,
    KeySpace,
    hold_key_spaces,
    key_spaces,
)
from recordsync.state.location import StateLocation
from recordsync.state.targets import normalize_url

DEALS = """object_type: deals
source:
  path: deals.csv
name:
  column: Name
ledger_key: {column: Deal ID}
fields:
  stage: Stage
  amount: Amount
"""
CONTACTS = """object_type: contacts
source:
  path: contacts.csv
name:
  column: Name
match_by: [email]
fields:
  email: Email
"""
ROWS = 6


def write_project(root: Path) -> Path:
    """deals.yaml (a custom object keyed by a ledger key) and contacts.yaml; pipelines
    first.yaml and second.yaml both run deals.yaml, contacts.yaml runs alone."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "deals.csv").write_text(
        "Deal ID,Name,Stage,Amount\n"
        + "".join(f"D-{i},Deal {i},prospecting,{100 * i}\n" for i in range(ROWS))
    )
    (root / "contacts.csv").write_text(
        "Name,Email\n" + "".join(f"Person {i},p{i}@example.com\n" for i in range(ROWS))
    )
    (root / "deals.yaml").write_text(DEALS)
    (root / "contacts.yaml").write_text(CONTACTS)
    for name, step in (("first", "deals"), ("second", "deals"), ("people", "contacts")):
        (root / f"{name}.yaml").write_text(f"name: {name}\nsteps:\n  - {step}.yaml\n")
    return root


def spaces_of(pipeline: Path, url: str) -> list[KeySpace]:
    loaded = load_pipeline(pipeline)
    return key_spaces(url, [(s.step_name, s.config) for s in loaded.steps])


def request(root: Path, pipeline: str, state_db: StateLocation, **kw: Any) -> RunRequest:
    return RunRequest(
        root / f"{pipeline}.yaml",
        report_dir=root / "reports",
        state_db=state_db,
        retry=RetryPolicy(sleep=lambda s: None, max_attempts=2),
        **kw,
    )


@contextmanager
def held_by_first(root: Path, url: str, state_db: StateLocation) -> Iterator[None]:
    """The locks pipeline ``first`` holds while it runs (its state store open, as a run's)."""
    with (
        StateStore(state_db) as store,
        hold_key_spaces(spaces_of(root / "first.yaml", url), pipeline="first", store=store),
    ):
        yield


def assert_names_first(message: str) -> None:
    assert "pipeline 'first'" in message, message
    assert f"pid {os.getpid()}" in message and f"host {socket.gethostname()}" in message
    assert "started 20" in message  # since when
    assert "'deals' records by ledger_key Deal ID (none)" in message
    assert "--wait-for-lock" in message  # what to do


# -- the key space of a mapping ------------------------------------------------------------


def test_a_mapping_shared_by_two_pipelines_is_one_key_space(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    first = spaces_of(root / "first.yaml", "http://h:1")
    assert first == spaces_of(root / "second.yaml", "HTTP://H:1/")
    assert [(s.object_type, s.key_kind) for s in first] == [("deals", "ledger_key Deal ID (none)")]
    assert first[0].steps == ("deals",)
    people = spaces_of(root / "people.yaml", "http://h:1")
    assert [s.key_kind for s in people] == ["match_by email"]
    assert not set(people) & set(first)
    assert first != spaces_of(root / "first.yaml", "http://other:1")  # another target


def test_each_kind_of_key_is_a_key_space_and_a_create_only_mapping_has_none(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.csv").write_text("Name,Web,Email\n")
    lines = "object_type: companies\nsource:\n  path: m.csv\nname:\n  column: Name\n"
    (tmp_path / "both.yaml").write_text(
        lines + "match_by: [name]\nledger_key: {column: Web, normalize: domain}\n"
    )
    (tmp_path / "none.yaml").write_text(lines)
    (tmp_path / "p.yaml").write_text("name: p\nsteps: [both.yaml, {mapping: none.yaml, name: n}]\n")
    spaces = spaces_of(tmp_path / "p.yaml", "http://h")
    assert [s.key_kind for s in spaces] == ["ledger_key Web (domain)", "match_by name"]


def test_normalize_url() -> None:
    assert normalize_url("HTTPS://API.Example.COM:443/v1/") == "https://api.example.com/v1"
    assert normalize_url("http://Host:8080/Path") == "http://host:8080/Path"
    assert normalize_url("http://[::1]:80/") == "http://[::1]"
    assert normalize_url("https://h/x?api_key=s3cret#f") == "https://h/x"  # never a secret
    here = Path.cwd()
    assert normalize_url("embedded-sandbox:.recordsync/sandbox.db") == (
        f"embedded-sandbox:{here / '.recordsync' / 'sandbox.db'}"
    )


@given(
    scheme=st.sampled_from(["http", "HTTP", "https", "Https"]),
    host=st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,20}(\.[A-Za-z]{2,5}){0,2}", fullmatch=True),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    path=st.from_regex(r"(/[A-Za-z0-9_-]{1,8}){0,3}/?", fullmatch=True),
)
def test_target_identity_is_stable(scheme: str, host: str, port: int | None, path: str) -> None:
    url = f"{scheme}://{host}{f':{port}' if port else ''}{path}"
    once = normalize_url(url)
    assert normalize_url(once) == once
    shouted = f"{scheme.upper()}://{host.upper()}{f':{port}' if port else ''}{path}/"
    assert normalize_url(shouted) == once
    assert once.startswith(f"{scheme.lower()}://{host.lower()}") and not once.endswith("/")


def test_lock_files_have_safe_names_and_say_what_they_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "user"))
    space = KeySpace("http://h/../../x", "a/b", "ledger_key ../etc (none)", ("s",))
    with StateStore(tmp_path / "state" / "state.db") as store:
        with hold_key_spaces([space], pipeline="p", store=store):
            files = [
                *(tmp_path / "user").iterdir(),
                *(tmp_path / "state/locks/keyspaces").iterdir(),
            ]
            assert len(files) == 2
            for f in files:
                assert f.name == space.file_name and f.name[:-5].isalnum()
                assert "'a/b' records by ledger_key ../etc (none) in http://h/../../x" in (
                    f.read_text()
                )
        assert all(f.read_text() == "" for f in files)  # released: no holder left


# -- runs against the sandbox (SQLite state) ------------------------------------------------


def test_second_pipeline_sharing_a_mapping_is_refused_naming_the_first(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    db = tmp_path / "state.db"
    with served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, db), pytest.raises(RunAborted) as info:
            run_pipeline(request(root, "second", db), target=target(url))
        assert_names_first(str(info.value))
        assert exit_code_for(info.value) == EXIT_ABORTED
        assert all_records(url, "deals") == []  # nothing sent
        # released: the same run now goes through, every deal created once
        result = run_pipeline(request(root, "second", db), target=target(url))
        assert result.exit_code == 0
        assert len(all_records(url, "deals")) == ROWS


def test_the_lock_beside_the_state_file_keeps_out_another_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user (another lock directory) sharing the state file is kept out by the
    lock files beside it."""
    root = write_project(tmp_path / "project")
    db = tmp_path / "state.db"
    with served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, db):
            monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "other-user"))
            with pytest.raises(RunAborted) as info:
                run_pipeline(request(root, "second", db), target=target(url))
        assert_names_first(str(info.value))
        assert str(db.parent / "locks" / "keyspaces") in str(info.value)
        assert all_records(url, "deals") == []


def test_this_machines_lock_keeps_out_a_run_on_another_state_file(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    with served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, tmp_path / "a" / "state.db"):
            with pytest.raises(RunAborted) as info:
                run_pipeline(
                    request(root, "second", tmp_path / "b" / "state.db"), target=target(url)
                )
            assert_names_first(str(info.value))
            with pytest.raises(RunAborted):  # nor without state
                run_pipeline(request(root, "second", None, state=False), target=target(url))
            dry = run_pipeline(
                request(root, "second", tmp_path / "b.db", dry_run=True), target=target(url)
            )
            assert dry.exit_code == 0  # a dry run takes no lock
        assert all_records(url, "deals") == []


def test_other_key_spaces_run_side_by_side(tmp_path: Path) -> None:
    """While ``first`` writes deals: contacts go to the same target, and the same deals
    mapping to another target."""
    root = write_project(tmp_path / "project")
    db = tmp_path / "state.db"
    with served(tmp_path / "sandbox.db") as url, served(tmp_path / "other.db") as other:
        with held_by_first(root, url, db):
            people = run_pipeline(request(root, "people", db), target=target(url))
            assert people.exit_code == 0
            second = run_pipeline(request(root, "second", db), target=target(other))
            assert second.exit_code == 0
        assert len(all_records(url, "contacts")) == ROWS
        assert len(all_records(other, "deals")) == ROWS


class _Waiting(logging.Handler):
    """Sets ``seen`` when a run logs that it waits for a lock."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("waiting up to"):
            self.seen.set()


def run_while_held(hold: Any, run: Any) -> tuple[RunResult | None, BaseException | None, bool]:
    """Start ``run()`` in a thread while ``hold`` (a context manager) is held; release it
    once the run says it waits. (result, error, whether the run waited)."""
    handler = _Waiting()
    logger = logging.getLogger("recordsync.state")  # the key-space and pipeline locks
    logger.addHandler(handler)
    out: list[Any] = [None, None]

    def target_() -> None:
        try:
            out[0] = run()
        except BaseException as exc:  # handed to the test
            out[1] = exc

    try:
        with hold:
            thread = threading.Thread(target=target_)
            thread.start()
            waited = handler.seen.wait(120)  # a guard against a hang, not a measurement
        thread.join(300)
    finally:
        logger.removeHandler(handler)
    return out[0], out[1], waited


def test_wait_for_lock_waits_until_the_first_releases(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    db = tmp_path / "state.db"
    with served(tmp_path / "sandbox.db") as url:
        result, error, waited = run_while_held(
            held_by_first(root, url, db),
            lambda: run_pipeline(
                request(root, "second", db, wait_for_lock=600), target=target(url)
            ),
        )
        assert waited and error is None, error
        assert result is not None and result.exit_code == 0
        assert len(all_records(url, "deals")) == ROWS


def test_wait_for_lock_also_waits_for_a_run_of_the_same_pipeline(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    db = tmp_path / "state.db"
    with served(tmp_path / "sandbox.db") as url:
        StateStore(db).close()
        result, error, waited = run_while_held(
            PipelineLock(db.parent, "second", db),
            lambda: run_pipeline(
                request(root, "second", db, wait_for_lock=600), target=target(url)
            ),
        )
        assert waited and error is None, error
        assert result is not None and result.exit_code == 0


# -- the command line, in another process ---------------------------------------------------


def _cli(root: Path, url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "RECORDSYNC_API_KEY": KEY, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recordsync",
            "run",
            str(root / "second.yaml"),
            "-q",
            "--base-url",
            url,
            "--state-db",
            str(root / "state.db"),
            "--report-dir",
            str(root / "reports"),
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
    )


def test_cli_run_is_refused_while_another_pipeline_writes_its_key_space(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    with served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, root / "state.db"):
            proc = _cli(root, url)
            _, err = proc.communicate(timeout=300)
        assert proc.returncode == EXIT_ABORTED, err
        assert_names_first(err)
        assert all_records(url, "deals") == []


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:  # the test failed while it ran
        proc.kill()
        proc.communicate()


def test_cli_wait_for_lock_waits_until_the_first_releases(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    with ExitStack() as stack, served(tmp_path / "sandbox.db") as url:
        with held_by_first(root, url, root / "state.db"):
            proc = _cli(root, url, "--wait-for-lock", "600")
            stack.callback(_end, proc)
            assert proc.stderr is not None
            lines = []
            for line in proc.stderr:  # until it says it waits (or ends)
                lines.append(line)
                if line.startswith("waiting up to"):
                    break
            assert lines and lines[-1].startswith("waiting up to"), lines
            assert "pipeline 'first'" in lines[-1]
            assert all_records(url, "deals") == []  # waiting: nothing sent yet
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert len(all_records(url, "deals")) == ROWS

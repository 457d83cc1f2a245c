"""native_memory: a run sets Arrow's pool (jemalloc where pyarrow has it, else the system's)
and glibc's arena cap once, and gives freed memory
back after each source batch. What the process's RSS does is measured by
bench/bench_memory.py, never here (no memory bounds in tests): these check the calls, with a
recording stand-in for the C library."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from tests.e2e.support import REPO, served, target

import recordsync.tuning.native_memory as native_memory
from recordsync.config.models import SourceConfig
from recordsync.read import iter_source
from recordsync.run.pipeline import RunRequest, run_pipeline


class FakeLibc:
    """Records the glibc calls native_memory makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | int, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLibc]:
    fake = FakeLibc()
    monkeypatch.setattr(native_memory, "_libc", fake)
    monkeypatch.setattr(native_memory, "_configured", False)
    before = pa.default_memory_pool()
    yield fake
    pa.set_memory_pool(before)


def test_a_run_uses_jemalloc_and_caps_the_arenas(
    tmp_path: Path, libc: FakeLibc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(native_memory.POOL_ENV, raising=False)
    monkeypatch.delenv(native_memory.ARENA_ENV, raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())  # the wheels' default
    for d in ("pipelines", "configs", "sample_data"):
        shutil.copytree(REPO / d, tmp_path / d)
    request = RunRequest(
        tmp_path / "pipelines" / "nightly.yaml",
        report_dir=tmp_path / "reports",
        state_db=tmp_path / "state.db",
    )
    with served(tmp_path / "sandbox.db") as url:
        result = run_pipeline(request, target=target(url))
        assert result.summary["totals"]["rows_read"] > 0
        assert pa.default_memory_pool().backend_name == "jemalloc"  # the wheels have it
        assert libc.calls.count(("mallopt", native_memory.M_ARENA_MAX, native_memory.ARENAS)) == 1
        assert ("malloc_trim", 0) in libc.calls  # after the source's batches
        libc.calls.clear()
        run_pipeline(request, target=target(url))  # once per process
    assert not [c for c in libc.calls if c[0] == "mallopt"]


def test_jemalloc_gives_freed_pages_back_after_the_decay(
    libc: FakeLibc, monkeypatch: pytest.MonkeyPatch
) -> None:
    decays: list[int] = []
    monkeypatch.delenv(native_memory.POOL_ENV, raising=False)
    monkeypatch.setattr(pa, "jemalloc_set_decay_ms", decays.append)
    native_memory.configure()
    assert pa.default_memory_pool().backend_name == "jemalloc"
    assert decays == [native_memory.DECAY_MS]


def test_without_jemalloc_the_system_pool(
    libc: FakeLibc, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> pa.MemoryPool:
        raise pa.ArrowNotImplementedError("this build of Arrow has no jemalloc")

    monkeypatch.delenv(native_memory.POOL_ENV, raising=False)
    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    native_memory.configure()
    assert pa.default_memory_pool().backend_name == "system"


def test_a_pool_the_user_chose_is_kept(libc: FakeLibc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native_memory.POOL_ENV, "mimalloc")
    monkeypatch.delenv(native_memory.ARENA_ENV, raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    native_memory.configure()
    assert pa.default_memory_pool().backend_name == "mimalloc"
    assert libc.calls == [("mallopt", native_memory.M_ARENA_MAX, native_memory.ARENAS)]


def test_an_arena_cap_the_user_set_is_kept(
    libc: FakeLibc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(native_memory.ARENA_ENV, "8")  # glibc applied it at start-up
    native_memory.configure()
    assert libc.calls == []


def test_without_glibc_only_the_pool_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_memory, "_libc", None)
    monkeypatch.setattr(native_memory, "_configured", False)
    monkeypatch.delenv(native_memory.POOL_ENV, raising=False)
    before = pa.default_memory_pool()
    try:
        pa.set_memory_pool(pa.mimalloc_memory_pool())
        native_memory.configure()
        native_memory.give_back()
        assert pa.default_memory_pool().backend_name == "jemalloc"
    finally:
        pa.set_memory_pool(before)


def test_freed_memory_is_given_back_after_each_batch(
    tmp_path: Path, libc: FakeLibc, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"{i},name {i},{i * 7}" for i in range(150_000)]  # 3.7 MB: 1 MiB blocks
    (tmp_path / "a.csv").write_text("id,name,score\n" + "\n".join(lines) + "\n")
    batches = list(iter_source(SourceConfig(path="a.csv"), tmp_path))
    assert len(batches) > 2
    assert sum(len(sb.rows) for sb in batches) == 150_000
    # once after each batch was handed on (the last one after the reader ended)
    assert libc.calls.count(("malloc_trim", 0)) == len(batches)

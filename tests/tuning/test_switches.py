"""Each process-wide tweak is behind one switch (recordsync.tuning): off in a library unless
asked for, on from the command line, and a run's RunRequest(tuning=...) holds for that run."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.support import served, target
from tests.e2e.test_ledger_e2e import request, write, write_csv

import recordsync
from recordsync import tuning
from recordsync.core.model import StepPlan
from recordsync.run.pipeline import run_pipeline
from recordsync.tuning import Tuning, native_memory
from recordsync.tuning.gcpause import BatchGC, gc_paused
from recordsync.tuning.switching import prompt_switching

SRC = str(Path(recordsync.__file__).resolve().parents[1])
OFF = Tuning()


def test_a_fresh_process_has_every_tweak_off_and_the_command_line_turns_them_on() -> None:
    code = (
        "import recordsync.tuning as t\n"
        "print(t.current())\n"
        "from recordsync.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(t.current())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    assert out[0] == repr(OFF)
    assert out[-1] == repr(Tuning.all())


def test_off_the_gc_is_left_alone() -> None:
    assert gc.isenabled()
    with tuning.using(OFF):
        with gc_paused():
            assert gc.isenabled()
        batches = BatchGC()
        with batches.building():
            assert gc.isenabled()
        assert gc.get_freeze_count() == 0
    with gc_paused():  # on (the suite's setting, as the command line's)
        assert not gc.isenabled()
    assert gc.isenabled()


def test_off_the_switch_interval_is_left_alone() -> None:
    before = sys.getswitchinterval()
    with tuning.using(OFF), prompt_switching(interval=before / 10):
        assert sys.getswitchinterval() == before
    with prompt_switching(interval=before / 10):
        assert sys.getswitchinterval() == pytest.approx(before / 10)
    assert sys.getswitchinterval() == before


class _Libc:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def mallopt(self, *args: int) -> None:
        self.calls.append("mallopt")

    def malloc_trim(self, *args: int) -> None:
        self.calls.append("malloc_trim")


def test_off_native_memory_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _Libc()
    monkeypatch.setattr(native_memory, "_libc", libc)
    monkeypatch.setattr(native_memory, "_configured", False)
    monkeypatch.setenv(native_memory.POOL_ENV, "system")  # Arrow's pool: not this test's
    monkeypatch.delenv(native_memory.ARENA_ENV, raising=False)
    with tuning.using(OFF):
        native_memory.configure()
        native_memory.give_back()
    assert libc.calls == []
    native_memory.configure()  # on: configured once, now that it is asked for
    native_memory.give_back()
    assert libc.calls == ["mallopt", "malloc_trim"]


@pytest.mark.parametrize(
    ("process", "asked", "seen"),
    [(OFF, None, OFF), (OFF, Tuning.all(), Tuning.all()), (Tuning.all(), OFF, OFF)],
)
def test_a_run_uses_the_tuning_it_asks_for_else_the_process_setting(
    tmp_path: Path, process: Tuning, asked: Tuning | None, seen: Tuning
) -> None:
    write_csv(tmp_path / "orgs.csv", ["Company"], [["Acme"], ["Beta"]])
    write(
        tmp_path / "orgs.yaml",
        "object_type: companies\nsource: {path: orgs.csv}\nname: Company\nmatch_by: [name]\n",
    )
    pipeline = write(tmp_path / "orgs-sync.yaml", "steps: [orgs.yaml]\n")
    during: list[Tuning] = []

    def wrap(plan: StepPlan) -> StepPlan:
        during.append(tuning.current())
        return plan

    kw: dict[str, Any] = {} if asked is None else {"tuning": asked}
    with served(tmp_path / "s.db") as url, tuning.using(process):
        result = run_pipeline(request(tmp_path, pipeline, **kw), target=target(url), wrap=wrap)
        assert tuning.current() == process  # restored after the run
    assert result.exit_code == 0
    assert during == [seen]

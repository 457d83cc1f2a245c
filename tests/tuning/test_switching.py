"""The switch interval while a step sends: shortened, shared by concurrent runs, restored."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordsync.tuning.switching import SEND_SWITCH_INTERVAL, prompt_switching


def near(seconds: float) -> object:
    """The interpreter keeps the interval in whole microseconds."""
    return pytest.approx(seconds, abs=2e-6)


@pytest.fixture
def default_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield 0.005
    sys.setswitchinterval(before)


def test_shortened_inside_and_restored_after_even_on_error(default_interval: float) -> None:
    with prompt_switching():
        assert sys.getswitchinterval() == near(SEND_SWITCH_INTERVAL)
    assert sys.getswitchinterval() == near(default_interval)
    with pytest.raises(RuntimeError), prompt_switching():
        raise RuntimeError("boom")
    assert sys.getswitchinterval() == near(default_interval)


def test_a_shorter_interval_of_the_host_program_is_kept(default_interval: float) -> None:
    sys.setswitchinterval(0.0002)
    with prompt_switching():
        assert sys.getswitchinterval() == near(0.0002)
    assert sys.getswitchinterval() == near(0.0002)


def test_overlapping_runs_restore_only_when_the_last_ends(default_interval: float) -> None:
    """Two runs in two threads, ending in the other order than they began."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[float] = []

    def first() -> None:
        with prompt_switching():
            first_in.set()
            second_in.wait(60)
        first_out.set()

    def second() -> None:
        first_in.wait(60)
        with prompt_switching():
            second_in.set()
            first_out.wait(60)
            seen.append(sys.getswitchinterval())  # the first run ended: still short
        seen.append(sys.getswitchinterval())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert seen == [near(SEND_SWITCH_INTERVAL), near(default_interval)]


def test_a_run_sends_with_the_short_interval_and_a_dry_run_does_not(
    tmp_path: Path, default_interval: float
) -> None:
    from tests.send.support import sandbox_client

    from recordsync.core.model import PreparedRow, RowStatus, SourceRow, StepPlan
    from recordsync.run.runner import run_plans
    from recordsync.send import step as step_module
    from recordsync.send.plan import SendOptions

    rows = [
        PreparedRow(
            SourceRow("c.csv", i + 2, {}),
            RowStatus.VALID,
            {"name": f"P{i}", "fields": {"email": f"p{i}@x.example"}},
        )
        for i in range(3)
    ]
    seen: list[float] = []
    original = step_module.StepRunner.run

    def spy(self: step_module.StepRunner, plan: StepPlan) -> object:
        seen.append(sys.getswitchinterval())
        return original(self, plan)

    step_module.StepRunner.run = spy  # type: ignore[method-assign]
    try:
        with sandbox_client(tmp_path) as (client, _app):
            for dry in (False, True):
                result = run_plans(
                    [StepPlan("contacts", "c.yaml", "contacts", lambda: iter(rows))],
                    pipeline="t",
                    report_root=tmp_path / str(dry),
                    options=SendOptions(100, None, dry),
                    client=None if dry else client,
                )
                assert result.summary["accounting_ok"]
    finally:
        step_module.StepRunner.run = original  # type: ignore[method-assign]
    assert seen == [near(SEND_SWITCH_INTERVAL), near(default_interval)]
    assert sys.getswitchinterval() == near(default_interval)

"""The per-batch GC handling restores the collector's state and unfreezes what it froze."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from recordsync.tuning.gcpause import BatchGC


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_building_pauses_then_freezes_and_release_unfreezes() -> None:
    gc.enable()
    assert gc.get_freeze_count() == 0
    gcb = BatchGC()
    with gcb.building():
        assert not gc.isenabled()
        rows = [{"a": [i]} for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(rows)
    with gcb.building():  # the next batch unfreezes the previous one first
        assert gc.get_freeze_count() == 0
    gcb.release()
    gcb.release()  # idempotent
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_state_restored_on_error() -> None:
    gc.enable()
    gcb = BatchGC()
    with pytest.raises(RuntimeError), gcb.building():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gcb.release()
    assert gc.get_freeze_count() == 0


def test_a_disabled_gc_stays_disabled_and_nothing_is_frozen() -> None:
    gc.disable()
    gcb = BatchGC()
    with gcb.building():
        pass
    assert not gc.isenabled() and gc.get_freeze_count() == 0
    gcb.release()


def test_objects_frozen_by_someone_else_stay_frozen() -> None:
    gc.enable()
    gc.freeze()
    theirs = gc.get_freeze_count()
    gcb = BatchGC()
    with gcb.building():
        pass
    gcb.release()
    # not unfrozen by us (that would leave none), nothing of ours added (that would be more);
    # in a whole suite another thread may free a frozen object of its own meanwhile
    assert theirs - 100 <= gc.get_freeze_count() <= theirs


def test_garbage_cycles_parked_by_a_freeze_are_collected_after_release() -> None:
    gc.enable()
    gcb = BatchGC()

    class Node:
        other: object = None

    with gcb.building():  # the GC is paused: this cycle survives until the freeze
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
    gc.collect()
    assert ref() is not None  # frozen: no collection looks at it
    gcb.release()
    gc.collect()
    assert ref() is None


class _Node:
    other: object = None


def _cycles(n: int) -> list[_Node]:
    nodes = [_Node() for _ in range(n)]
    for a, b in zip(nodes[::2], nodes[1::2], strict=True):
        a.other, b.other = b, a
    return nodes


def _garbage_parked_after_the_baseline(check_every: int, growth: float) -> tuple[BatchGC, Any]:
    """A BatchGC whose ``check_every``-th release took its baseline, then cycles (more than
    ``growth`` of what was parked) alive at the next freeze and dead since: a weak reference
    to one."""
    gc.enable()
    gc.collect()
    gcb = BatchGC(check_every=check_every)
    for _ in range(check_every):  # releases 1 .. check_every - 1: not counted
        with gcb.building():
            pass
    parked = gc.get_freeze_count()
    with gcb.building():  # release check_every: counted (the baseline)
        alive = _cycles(2 * int(parked * growth) + 2000)
    ref = weakref.ref(alive[0])
    del alive  # garbage now, but frozen
    return gcb, ref


def test_garbage_parked_by_freezes_is_collected_by_release_alone() -> None:
    """Cycles alive at a freeze that die later go to the oldest generation when unfrozen,
    where CPython's own count never triggers a full collection: once they grow past GROWTH,
    release collects them (no gc.collect() by the caller)."""
    from recordsync.tuning.gcpause import GROWTH

    gcb, ref = _garbage_parked_after_the_baseline(1, GROWTH - 1)
    assert ref() is not None and gcb.collections == 0
    gcb.release()
    assert ref() is None and gcb.collections == 1


def test_no_collection_while_the_parked_objects_do_not_grow() -> None:
    gc.enable()
    gc.collect()
    gcb = BatchGC(check_every=1)
    for _ in range(20):
        with gcb.building():
            rows = [{"a": [i]} for i in range(2000)]
        del rows
    gcb.release()
    assert gcb.collections == 0


def test_parked_objects_are_counted_every_check_every_releases() -> None:
    """Counting walks every parked object: every check_every-th release counts, the first
    of them taking the baseline; garbage parked in between is collected at the next count."""
    gcb, ref = _garbage_parked_after_the_baseline(4, 0.5)
    for _ in range(3):  # releases 5, 6, 7: not counted
        with gcb.building():
            pass
    assert ref() is not None and gcb.collections == 0
    gcb.release()  # release 8: counted
    assert ref() is None and gcb.collections == 1


def test_a_small_run_never_counts_the_parked_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer releases than check_every (a small run): no walk of the parked objects."""
    counted: list[int] = []
    real = gc.get_freeze_count

    def counting() -> int:
        counted.append(1)
        return real()

    gcb = BatchGC(check_every=4)
    monkeypatch.setattr(gc, "get_freeze_count", counting)
    for _ in range(4):  # three releases (the first building has nothing to release)
        with gcb.building():
            pass
    frozen_checks = len(counted)  # _freeze asks whether someone else froze: once a building
    gcb.release()  # the fourth release: counted
    assert frozen_checks == 4 and len(counted) == 5

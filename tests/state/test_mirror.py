"""Mirror deletes: planning, limits, the empty-source guard, ledger marking."""

from __future__ import annotations

import pytest

from recordsync.core.errors import AuthError, RetriableApiError, RunAborted
from recordsync.state import ChangeDetector, StateStore, apply_deletes, plan_deletes
from recordsync.state.mirror import DeletePlan

from .conftest import prepared


@pytest.fixture
def ledger(store: StateStore) -> StateStore:
    store.record_acknowledged(
        "p", "contacts", "r1", [(f"k{i}", 100 + i, "h", "created") for i in range(10)]
    )
    store.record_acknowledged("p", "contacts", "r1", [("never", None, None, "failed")])
    return store


def test_plans_keys_that_left_the_source(ledger: StateStore) -> None:
    seen = (f"k{i}" for i in range(10) if i not in (3, 7))  # any iterable, streamed
    plan = plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=None)
    assert plan.deletes == [("k3", 103), ("k7", 107)]
    assert (plan.live_records, plan.seen_keys) == (10, 8)


def test_empty_source_never_deletes(ledger: StateStore) -> None:
    with pytest.raises(RunAborted) as info:
        plan_deletes(ledger, "p", "contacts", [], max_count=None, max_share=None)
    assert "source has no rows" in str(info.value) and "all 10 records" in str(info.value)
    assert "'contacts'" in str(info.value)


def test_empty_source_with_empty_ledger_is_fine(store: StateStore) -> None:
    plan = plan_deletes(store, "p", "contacts", [], max_count=0, max_share=0.0)
    assert plan.deletes == []


def test_over_max_share_is_refused(ledger: StateStore) -> None:
    seen = [f"k{i}" for i in range(6)]  # 4 of 10 gone
    with pytest.raises(RunAborted) as info:
        plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=0.25)
    msg = str(info.value)
    assert "4 of 10 records (40.0%)" in msg and "mirror_deletes.max_share 25%" in msg
    assert "nothing was deleted" in msg
    plan = plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=0.4)
    assert len(plan.deletes) == 4


def test_over_max_count_is_refused(ledger: StateStore) -> None:
    seen = [f"k{i}" for i in range(7)]
    with pytest.raises(RunAborted, match=r"mirror_deletes\.max_count 2"):
        plan_deletes(ledger, "p", "contacts", seen, max_count=2, max_share=None)
    assert len(plan_deletes(ledger, "p", "contacts", seen, max_count=3, max_share=None).deletes)


def test_bad_share_is_rejected(ledger: StateStore) -> None:
    with pytest.raises(ValueError):
        plan_deletes(ledger, "p", "contacts", ["k1"], max_count=None, max_share=25)


def test_apply_marks_deleted_and_collects_failures(ledger: StateStore) -> None:
    seen = [f"k{i}" for i in range(7)]
    plan = plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=None)
    calls: list[int] = []

    def delete(record_id: int) -> None:
        calls.append(record_id)
        if record_id == 108:
            raise RetriableApiError("timed out", method="DELETE", path="/api/objects/contacts")

    result = apply_deletes(plan, delete, run_id="r2")
    assert calls == [107, 108, 109]
    assert result.deleted == [("k7", 107), ("k9", 109)]
    assert [(k, r) for k, r, _ in result.failed] == [("k8", 108)]
    assert "timed out" in result.failed[0][2]
    gone = ledger.get("p", "contacts", "k7")
    assert gone is not None and (gone.last_status, gone.record_id, gone.input_hash) == (
        "deleted",
        107,
        None,
    )
    # a second plan only lists what is still live
    again = plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=None)
    assert again.deletes == [("k8", 108)]
    # a key that comes back is sent again
    result2 = ChangeDetector(ledger, "p", "contacts").classify([prepared(2, "k7")])
    assert result2.to_send[0].reason == "reappeared"


def test_auth_failure_stops_deleting(ledger: StateStore) -> None:
    plan = plan_deletes(ledger, "p", "contacts", ["k0"], max_count=None, max_share=None)

    def delete(record_id: int) -> None:
        raise AuthError("Invalid API key", status=401)

    with pytest.raises(AuthError):
        apply_deletes(plan, delete)
    assert ledger.get("p", "contacts", "k1") is not None
    assert ledger.counts("p")["contacts"]["created"] == 10


def test_many_seen_keys_stream_through_temp_table(store: StateStore) -> None:
    n = 20_000
    store.record_acknowledged("p", "m", "r", ((f"k{i}", i, "h", "created") for i in range(n)))
    plan = plan_deletes(
        store, "p", "m", (f"k{i}" for i in range(1, n)), max_count=1, max_share=None
    )
    assert plan.deletes == [("k0", 0)]


def test_a_mapping_the_ledger_never_saw_plans_nothing_and_leaves_no_trace(
    store: StateStore,
) -> None:
    plan = plan_deletes(store, "p", "new", ["a", "b", "a"], max_count=0, max_share=0.0)
    assert (plan.store, plan.pipeline, plan.mapping) == (store, "p", "new")
    assert (plan.live_records, plan.seen_keys, plan.deletes) == (0, 2, [])
    result = apply_deletes(DeletePlan(store, "p", "other", 0, 0, [("k", 1)]), lambda rid: None)
    assert (result.deleted, result.failed) == ([], [])
    assert store.scope_id("p", "new", create=False) is None
    assert store.scope_id("p", "other", create=False) is None


def test_a_ledger_without_live_records_deletes_nothing_whatever_the_source(
    store: StateStore,
) -> None:
    store.record_acknowledged("p", "contacts", "r1", [("never", None, None, "failed")])
    for seen in ([], ["x"]):
        plan = plan_deletes(store, "p", "contacts", seen, max_count=0, max_share=0.0)
        assert (plan.live_records, plan.deletes) == (0, [])


def test_an_empty_source_never_deletes_even_one_record(store: StateStore) -> None:
    store.record_acknowledged("p", "contacts", "r1", [("k0", 100, "h", "created")])
    with pytest.raises(RunAborted) as info:
        plan_deletes(store, "p", "contacts", [], max_count=None, max_share=None)
    assert str(info.value) == (
        "mirror deletes of mapping 'contacts' (pipeline 'p'): the source has no rows, so all 1"
        " records would be deleted; refused, nothing was deleted\n  hint: check the export; an"
        " empty source never deletes. To really remove everything, delete the records in the"
        " service and run `recordsync state reset`"
    )


def test_both_limits_are_named_when_both_are_passed(ledger: StateStore) -> None:
    with pytest.raises(RunAborted) as info:
        plan_deletes(ledger, "p", "contacts", ["k0"], max_count=2, max_share=0.25)
    assert str(info.value) == (
        "mirror deletes of mapping 'contacts' (pipeline 'p'): 9 of 10 records (90.0%) left the"
        " source, above mirror_deletes.max_count 2 and mirror_deletes.max_share 25%; refused,"
        " nothing was deleted\n  hint: check the export for missing rows; if these deletes are"
        " intended, run once with `recordsync run --allow-mass-deletes`, or raise"
        " mirror_deletes.max_count / max_share in the mapping"
    )


@pytest.mark.parametrize("share", [-0.1, 1.5, 25])
def test_a_share_outside_0_to_1_is_rejected(ledger: StateStore, share: float) -> None:
    with pytest.raises(ValueError, match=f"^max_share must be between 0 and 1, not {share}$"):
        plan_deletes(ledger, "p", "contacts", ["k1"], max_count=None, max_share=share)


def test_a_share_of_1_allows_every_record_but_an_empty_source(ledger: StateStore) -> None:
    plan = plan_deletes(ledger, "p", "contacts", ["gone"], max_count=None, max_share=1)
    assert len(plan.deletes) == 10


def test_a_deleted_entry_names_the_run_that_deleted_it(ledger: StateStore) -> None:
    """The ledger keeps which run marked a key deleted (``recordsync history --key``), by its
    number in ``run_numbers``; a delete outside a run names none."""
    seen = [f"k{i}" for i in range(10) if i not in (3, 7)]
    plan = plan_deletes(ledger, "p", "contacts", seen, max_count=None, max_share=None)
    apply_deletes(DeletePlan(ledger, "p", "contacts", 10, 8, plan.deletes[:1]), lambda rid: None)
    apply_deletes(
        DeletePlan(ledger, "p", "contacts", 10, 8, plan.deletes[1:]), lambda rid: None, run_id="r9"
    )
    outside, in_run = ledger.get("p", "contacts", "k3"), ledger.get("p", "contacts", "k7")
    assert outside is not None and in_run is not None
    assert (outside.last_status, outside.last_run_id, outside.record_id) == ("deleted", None, 103)
    assert (in_run.last_status, in_run.last_run_id, in_run.input_hash) == ("deleted", "r9", None)
    # the time is the run's (a delete outside a run has none)
    assert in_run.updated_at > "2026" and outside.updated_at == ""

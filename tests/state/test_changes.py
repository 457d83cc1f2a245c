"""Change detection: counts per reason, only acknowledged results count, ledger matching."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.core.model import RowStatus
from recordsync.state import ChangeDetector, SendReason, StateStore, input_hash, ledger_match
from recordsync.state.journal_content import JournaledRows
from recordsync.state.ledger_rows import status_sql

from .conftest import prepared


def _ack(store: StateStore, run_id: str, sends: list[tuple[str, int, str, str]]) -> None:
    store.record_acknowledged("p", "contacts", run_id, sends)


def test_first_run_sends_everything_as_new(store: StateStore) -> None:
    det = ChangeDetector(store, "p", "contacts")
    result = det.classify([prepared(i, f"k{i}@x") for i in range(2, 12)])
    assert len(result.to_send) == 10 and not result.unchanged
    assert {t.reason for t in result.to_send} == {SendReason.NEW}
    assert det.counts == {"new": 10, "unchanged": 0, "skipped": 0}


def test_rerun_sends_only_new_changed_and_failed(store: StateStore) -> None:
    rows = [prepared(i, f"k{i}@x", {"lead_score": i}) for i in range(2, 12)]
    first = ChangeDetector(store, "p", "contacts").classify(rows)
    acks = [(t.row.key, 100 + i, t.input_hash, "created") for i, t in enumerate(first.to_send)]
    acks[3] = (acks[3][0], 0, acks[3][2], "failed")  # k5 failed
    _ack(store, "r1", acks)  # type: ignore[arg-type]

    second_rows = list(rows)
    second_rows[0] = prepared(2, "k2@x", {"lead_score": 99})  # changed
    second_rows.append(prepared(12, "new@x"))  # new
    det = ChangeDetector(store, "p", "contacts")
    result = det.classify(second_rows)
    reasons = {t.row.key: t.reason for t in result.to_send}
    assert reasons == {
        "k2@x": SendReason.CHANGED,
        "k5@x": SendReason.RETRY,
        "new@x": SendReason.NEW,
    }
    assert len(result.unchanged) == 8
    assert det.counts == {"changed": 1, "retry": 1, "new": 1, "unchanged": 8, "skipped": 0}


def test_in_doubt_and_deleted_rows_are_sent_again(store: StateStore) -> None:
    row_a, row_b = prepared(2, "a@x"), prepared(3, "b@x")
    assert row_a.payload is not None and row_b.payload is not None
    _ack(store, "r1", [("a@x", 1, input_hash(row_a.payload), "in_doubt")])
    _ack(store, "r1", [("b@x", 2, input_hash(row_b.payload), "created")])
    deleted = status_sql("deleted")
    store.connection.execute(f"UPDATE ledger SET last_status = {deleted} WHERE source_key = 'b@x'")
    result = ChangeDetector(store, "p", "contacts").classify([row_a, row_b])
    assert [t.reason for t in result.to_send] == [SendReason.RETRY, SendReason.REAPPEARED]
    assert [t.was_in_doubt for t in result.to_send] == [True, False]


def test_full_refresh_sends_everything_but_keeps_identity(store: StateStore) -> None:
    row = prepared(2, "a@x")
    assert row.payload is not None
    _ack(store, "r1", [("a@x", 41, input_hash(row.payload), "created")])
    result = ChangeDetector(
        store, "p", "contacts", full_refresh=True, match_by_ledger_id=True
    ).classify([row])
    assert [t.reason for t in result.to_send] == [SendReason.FULL_REFRESH]
    assert result.to_send[0].payload["match_by"] == "id"
    assert result.to_send[0].payload["match_value"] == 41


def test_invalid_duplicate_and_keyless_rows(store: StateStore) -> None:
    rows = [
        prepared(2, "a@x", status=RowStatus.INVALID),
        prepared(3, "b@x", status=RowStatus.DUPLICATE),
        prepared(4, None),
    ]
    result = ChangeDetector(store, "p", "contacts").classify(rows)
    assert [r.source.source_row for r in result.skipped] == [2, 3]
    assert [(t.row.source.source_row, t.reason) for t in result.to_send] == [
        (4, SendReason.UNTRACKED)
    ]


def test_match_by_ledger_id_turns_an_email_change_into_an_update(store: StateStore) -> None:
    old = prepared(2, "cust-1", {"email": "old@x"})
    assert old.payload is not None
    _ack(store, "r1", [("cust-1", 77, input_hash(old.payload), "created")])
    new = prepared(2, "cust-1", {"email": "new@x"})
    plain = ChangeDetector(store, "p", "contacts").classify([new]).to_send[0]
    assert plain.payload["match_by"] == "email"  # option off: payload untouched
    matched = ChangeDetector(store, "p", "contacts", match_by_ledger_id=True).classify([new])
    send = matched.to_send[0]
    assert send.reason is SendReason.CHANGED
    assert (send.payload["match_by"], send.payload["match_value"]) == ("id", 77)
    assert send.payload["fields"] == {"email": "new@x"}
    assert new.payload is not None and new.payload["match_by"] == "email"  # not mutated


def test_ledger_match_needs_a_live_record_id() -> None:
    from recordsync.state import Entry

    payload = {"name": "n", "match_by": "name", "match_value": "n"}
    assert ledger_match(payload, None) is payload
    assert ledger_match(payload, Entry("k", None, None, "failed", "r", "t")) is payload
    assert ledger_match(payload, Entry("k", 5, None, "deleted", "r", "t")) is payload
    assert ledger_match(payload, Entry("k", 5, "h", "created", "r", "t"))["match_value"] == 5


def test_one_bulk_lookup_per_chunk(store: StateStore) -> None:
    rows = [prepared(i, f"k{i}") for i in range(300)]
    _ack(store, "r0", [("k0", 1, "old", "created")])
    det = ChangeDetector(store, "p", "contacts")
    with patch.object(store, "lookup_many", wraps=store.lookup_many) as spy:
        first = det.classify(rows[:150])
        det.classify(rows[150:])
    assert spy.call_count == 2
    assert first.to_send[0].reason is SendReason.CHANGED and first.to_send[0].entry is not None


def test_a_ledger_empty_when_the_step_starts_is_never_looked_up(store: StateStore) -> None:
    """A first run: nothing to look up; what the run itself acknowledges meanwhile (keys it
    classified already) is not looked up either, however far the ledger was folded."""
    rows = [prepared(i, f"k{i}") for i in range(2, 12)]
    det = ChangeDetector(store, "p", "contacts")
    _ack(store, "r1", [("k2", 7, "h", "created")])  # the run's own first chunk, folded
    with patch.object(store, "lookup_many", wraps=store.lookup_many) as spy:
        result = det.classify(rows)
    assert spy.call_count == 0
    assert {t.reason for t in result.to_send} == {SendReason.NEW}
    assert ChangeDetector(store, "p", "contacts").classify(rows[:1]).to_send[0].entry


_rows = st.lists(
    st.tuples(
        st.sampled_from([RowStatus.VALID, RowStatus.VALID, RowStatus.INVALID, RowStatus.DUPLICATE]),
        st.one_of(st.none(), st.sampled_from(["a@x", "b@x", "c@x"])),
    ),
    max_size=12,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50)
@given(_rows, st.booleans(), st.booleans())
def test_an_empty_ledger_decides_every_row_as_the_row_by_row_loop_does(
    store: StateStore, spec: list[tuple[RowStatus, str | None]], full: bool, by_id: bool
) -> None:
    """No ledger entry for any row: the reasons made at once are the row-by-row loop's (which
    an empty resume journal forces), row for row, with the same counts in the same order."""
    rows = [prepared(i + 2, key, status=status) for i, (status, key) in enumerate(spec)]
    options = {"full_refresh": full, "match_by_ledger_id": by_id}
    fast = ChangeDetector(store, "p", "contacts", **options)
    slow = ChangeDetector(
        store, "p", "contacts", journaled=JournaledRows("contacts"), **options
    )
    a, b = fast.classify(rows), slow.classify(rows)
    assert [(t.row, t.payload, t.input_hash, t.reason, t.entry, t.encoded) for t in a.to_send] == [
        (t.row, t.payload, t.input_hash, t.reason, t.entry, t.encoded) for t in b.to_send
    ]
    assert (a.skipped, a.unchanged, a.done) == (b.skipped, b.unchanged, b.done)
    assert list(fast.counts.items()) == list(slow.counts.items())

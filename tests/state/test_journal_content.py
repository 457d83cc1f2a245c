"""Resume by content: journaled outcomes found by key and input hash, never by line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from recordsync.state.journal_content import JournaledRows


def test_a_row_gets_the_outcome_of_its_key_and_content_wherever_it_is() -> None:
    j = JournaledRows("contacts")
    j.add(3, 10, "email:a@x.io", "h1", "updated", 7, None)
    j.add(3, 11, "email:b@x.io", "h2", "failed", None, "422: bad")
    assert j.take("email:a@x.io", "h-other", 10) is None  # changed since: decided again
    assert j.take("email:c@x.io", "h1", 10) is None
    o = j.take("email:b@x.io", "h2", 40)  # moved to line 40
    assert o is not None and (o.status, o.record_id, o.error) == ("failed", None, "422: bad")
    assert (o.source_row, o.chunk_no, o.step, o.source_key) == (11, 3, "contacts", "email:b@x.io")
    assert j.take("email:b@x.io", "h2", 40) is None  # an outcome goes to one row
    assert (j.moved, j.left()) == (1, 1)


def test_identical_rows_without_a_key_take_one_outcome_each_the_same_line_first() -> None:
    j = JournaledRows("deals")
    for line in (5, 6, 7):
        j.add(1, line, None, "same", "created", 100 + line, None)
    j.add(1, 8, "", "same", "created", 1, None)  # an empty key is not no key
    first = j.take(None, "same", 6)
    assert first is not None and first.record_id == 106 and j.moved == 0
    second = j.take(None, "same", 99)
    third = j.take(None, "same", 98)
    assert second is not None and third is not None
    assert (second.record_id, third.record_id) == (105, 107) and j.moved == 2
    assert j.take(None, "same", 5) is None and j.left() == 1


@given(
    st.lists(
        st.tuples(st.sampled_from([None, "k1", "k2"]), st.sampled_from(["h1", "h2"])),
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_every_journaled_outcome_is_taken_back_exactly_once(
    entries: list[tuple[str | None, str]], rnd: object
) -> None:
    j = JournaledRows("s")
    for line, (key, h) in enumerate(entries):
        j.add(1, line, key, h, "updated", line, None)
    order = list(enumerate(entries))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    got = [j.take(key, h, 1000 + n) for n, (_, (key, h)) in enumerate(order)]
    assert sorted(o.record_id for o in got if o is not None) == list(range(len(entries)))
    assert j.left() == 0 and j.moved == len(entries)

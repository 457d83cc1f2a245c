"""SpillMap (recordsync.spill): the same answers as a dict, whether its entries are still in
memory or were written to its temporary database (a block lowered to a few entries)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.spill import KeySpool, SpillMap

OPS = st.lists(
    st.tuples(st.integers(-5, 40), st.integers(0, 9), st.sampled_from([None, "a", "b"])),
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, block=st.integers(1, 6))
def test_setdefault_and_get_many_answer_as_a_dict_does(
    ops: list[tuple[int, int, str | None]], block: int
) -> None:
    spill, plain = SpillMap(block), {}
    for key, a, b in ops:
        assert spill.setdefault(key, (a, b)) == plain.setdefault(key, (a, b))
    keys = list(range(-6, 42))
    assert spill.get_many(keys) == {k: plain[k] for k in keys if k in plain}
    assert [spill.get(k) for k in keys] == [plain.get(k) for k in keys]
    spill.close()


def test_entries_past_a_block_go_to_disk_and_are_found_there() -> None:
    spill = SpillMap(block=2)
    spill.put_new(10, (1, "k1"))
    assert spill.spilled == 0
    spill.put_new(20, (2, None))
    assert spill.spilled == 2  # the block was written out
    spill.put_new(30, (3, "k3"))
    assert spill.get_many([10, 20, 30, 15, 99]) == {10: (1, "k1"), 20: (2, None), 30: (3, "k3")}
    assert spill.setdefault(10, (7, "other")) == (1, "k1")  # the first value is kept
    spill.close()
    assert spill.get(10) is None


def test_a_key_spool_gives_every_key_back_in_order_whether_on_disk_or_not() -> None:
    spool = KeySpool(block=3)
    keys = ["a", "name:Zoë", 'q"uote', "line\nbreak", "", "b", "c"]
    spool.extend(keys[:2])
    assert spool.spilled == 0 and list(spool) == keys[:2]
    spool.extend(keys[2:])
    assert spool.spilled == 7  # written out past the block
    assert list(spool) == keys
    spool.extend(["d"])  # more after a read: appended, not written over
    spool.extend(["e", "f"])
    assert list(spool) == [*keys, "d", "e", "f"] and spool.spilled == 10
    spool.close()
    assert list(spool) == []

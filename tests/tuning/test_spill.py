"""SpillMap (recordsync.tuning.spill): the same answers as a dict, whether its entries are still in
memory or were written to its temporary database (a block lowered to a few entries)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.tuning.spill import KeySpool, SpillMap

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


CHUNKS = st.lists(
    st.lists(st.tuples(st.integers(-5, 40), st.integers(0, 9), st.sampled_from([None, "a"]))),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(chunks=CHUNKS, block=st.integers(1, 6))
def test_setdefault_many_answers_as_setdefault_of_each_in_turn(
    chunks: list[list[tuple[int, int, str | None]]], block: int
) -> None:
    """Whether the chunk's keys are new (set at once) or not (one by one), in memory or on
    disk: the same entries as a dict's setdefault of each pair in order."""
    spill, plain = SpillMap(block), {}
    for chunk in chunks:
        spill.setdefault_many([k for k, _, _ in chunk], [(a, b) for _, a, b in chunk])
        for key, a, b in chunk:
            plain.setdefault(key, (a, b))
    keys = list(range(-6, 42))
    assert spill.get_many(keys) == {k: plain[k] for k in keys if k in plain}
    spill.close()


def test_put_many_sets_new_keys_at_once_and_spills_past_a_block() -> None:
    spill = SpillMap(block=3)
    spill.put_many([5, 6], [(1, "k5"), (2, None)])
    assert spill.spilled == 0
    spill.put_many([7, 8], iter([(3, None), (4, "k8")]))
    assert spill.spilled == 4  # the block was written out, all of it
    spill.setdefault_many([8, 9], [(9, "x"), (5, None)])  # 8 is on disk: kept as it was
    assert spill.get_many(range(4, 11)) == {
        5: (1, "k5"), 6: (2, None), 7: (3, None), 8: (4, "k8"), 9: (5, None)
    }  # fmt: skip
    spill.close()


def test_blocks_wait_in_a_file_until_a_key_inside_their_range_is_asked() -> None:
    """A first run's records are all new (each id above every earlier one): its blocks are
    appended to a file and never indexed; the first key asked inside their range moves them
    into the database, which takes the later blocks at once."""
    spill = SpillMap(block=2)
    for rid in range(1, 7):
        spill.setdefault_many([rid], [(rid + 100, f"k{rid}")])
    assert spill.spilled == 6 and spill._db is None
    assert spill.get_many([7, 8]) == {}  # above every id written: no database
    assert spill._db is None
    assert spill.get(3) == (103, "k3")  # inside: every block moves into the database
    assert spill._db is not None and spill._file is None
    spill.put_many([9, 10], [(109, None), (110, "k10")])
    assert spill._file is None  # straight into the database now
    assert spill.get_many(range(12)) == {r: (r + 100, f"k{r}") for r in range(1, 7)} | {
        9: (109, None), 10: (110, "k10")
    }  # fmt: skip
    spill.close()

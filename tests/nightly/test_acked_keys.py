"""The keys a database-mode step acknowledged (:mod:`recordsync.nightly.acked_keys`): all of
them back, in order, while memory holds at most one array of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordsync.nightly import acked_keys
from recordsync.nightly.acked_keys import AckedKeysWriter
from recordsync.state.store import StateStore


def _writer(tmp_path: Path) -> tuple[StateStore, AckedKeysWriter]:
    store = StateStore(tmp_path / "state.db")
    return store, AckedKeysWriter(store, "p", "contacts", "r1")


@settings(max_examples=25)
@given(keys=st.lists(st.text(max_size=12).filter(lambda k: "\x00" not in k), max_size=40))
def test_every_key_comes_back_in_order(
    tmp_path_factory: pytest.TempPathFactory, keys: list[str]
) -> None:
    tmp = tmp_path_factory.mktemp("acked")
    store, w = _writer(tmp)
    old = acked_keys._FLUSH
    acked_keys._FLUSH = 7  # several arrays on disk, a part in memory
    try:
        for i, k in enumerate(keys):
            w.add((i, i), k, None, None, i + 1)
            assert len(w._keys) < 7 and w._spilled == i + 1 - len(w._keys)  # the rest on disk
        assert w.acked_count == len(keys)
        back = [k for array in w.acked() for k in array.to_pylist()]
        assert back == keys
        assert w._file is None  # read once, then closed
        w.discard()
    finally:
        acked_keys._FLUSH = old
        store.close()


def test_a_discarded_writer_closes_its_keys_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acked_keys, "_FLUSH", 2)
    store, w = _writer(tmp_path)
    try:
        for i in range(5):
            w.add((i, i), str(i), None, None, i + 1)
        spilled = w._file
        assert spilled is not None and len(w._keys) == 1
        w.discard()
        assert spilled.closed and w._file is None
    finally:
        store.close()

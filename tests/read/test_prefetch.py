"""read_ahead: the wrapped iterator's items, order and exceptions, produced in a thread that
starts on demand and always stops."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordsync.config import SourceConfig
from recordsync.core.errors import SourceError
from recordsync.read import iter_source
from recordsync.read.prefetch import read_ahead


class Source:
    """A generator that records which thread runs it and whether it was closed."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.started = threading.Event()
        self.threads: set[str] = set()
        self.closed_in: str | None = None

    def __iter__(self) -> Iterator[int]:
        self.started.set()
        try:
            for i in range(self.n):
                self.threads.add(threading.current_thread().name)
                if i == self.fail_at:
                    raise ValueError(f"bad item {i}")
                yield i
        finally:
            self.closed_in = threading.current_thread().name


def readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "recordsync-read"]


def test_same_items_in_order_read_in_another_thread() -> None:
    src = Source(50)
    assert list(read_ahead(iter(src))) == list(range(50))
    assert src.threads == {"recordsync-read"} and src.closed_in == "recordsync-read"
    assert readers() == []


def test_an_exception_comes_after_the_items_before_it() -> None:
    got: list[int] = []
    with pytest.raises(ValueError, match="bad item 3"):
        for i in read_ahead(iter(Source(10, fail_at=3))):
            got.append(i)
    assert got == [0, 1, 2]
    assert readers() == []


def test_nothing_is_read_before_the_first_item_is_asked_for() -> None:
    src = Source(3)
    it = read_ahead(iter(src))
    assert not src.started.is_set() and readers() == []
    assert next(it) == 0
    it.close()
    assert readers() == []


@pytest.mark.parametrize("how", ["close", "drop"])
def test_stopping_early_closes_the_source_and_ends_the_thread(how: str) -> None:
    src = Source(1000)
    it = read_ahead(iter(src))
    assert next(it) == 0 and next(it) == 1
    if how == "close":
        it.close()
    else:
        del it
        gc.collect()
    assert src.closed_in == "recordsync-read"  # the source's own finally ran, in its thread
    assert readers() == []


def test_sources_keep_their_errors_and_rows(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x,y\n1,2\n3,4,5\n6,7\n")
    batches = list(iter_source(SourceConfig(path="a.csv"), tmp_path))
    assert [sb.rows.tolist() for sb in batches] == [[2, 4]]
    assert [b.line for b in batches[0].bad] == [3]
    with pytest.raises(SourceError, match="source file not found"):
        list(iter_source(SourceConfig(path="missing.csv"), tmp_path))
    with pytest.raises(SourceError, match="source not found"):
        list(iter_source(SourceConfig(path="missing.parquet", format="parquet"), tmp_path))
    assert readers() == []

"""Lazy chunking: sizes, the canary, no loss, no materialisation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.core.errors import ConfigError
from recordsync.send.chunks import chunked


@given(
    n=st.integers(0, 450),
    size=st.integers(1, 100),
    first=st.one_of(st.none(), st.integers(1, 100)),
)
def test_chunks_concatenate_to_the_input_and_respect_the_sizes(
    n: int, size: int, first: int | None
) -> None:
    chunks = list(chunked(range(n), size, first))
    assert [x for c in chunks for x in c] == list(range(n))
    if chunks:
        assert len(chunks[0]) <= min(size, first or size)
        assert all(0 < len(c) <= size for c in chunks)
        assert all(len(c) == size for c in chunks[1:-1])


def test_chunking_is_lazy() -> None:
    pulled = 0

    def source() -> Iterator[int]:
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield i

    first = next(chunked(source(), 100, 10))
    assert first == list(range(10))
    assert pulled == 10


@pytest.mark.parametrize(("size", "first"), [(0, None), (101, None), (100, 101)])
def test_sizes_beyond_the_service_limit_are_config_errors(size: int, first: int | None) -> None:
    with pytest.raises(ConfigError, match="between 1 and 100"):
        list(chunked([1], size, first))

"""Cut a stream into chunks lazily: at most ``size`` items each, the first one maybe smaller.

Nothing is materialised beyond the chunk being filled (like sqlite-utils' ``chunks()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from recordsync.core.errors import ConfigError
from recordsync.core.model import MAX_BATCH

T = TypeVar("T")


def check_chunk_size(size: int, *, key: str = "chunk_size") -> int:
    if not 1 <= size <= MAX_BATCH:
        raise ConfigError(
            f"{key} must be between 1 and {MAX_BATCH} (the service's batch limit), got {size}",
            key=key,
        )
    return size


def chunked(items: Iterable[T], size: int, first_size: int | None = None) -> Iterator[list[T]]:
    """Yield lists of at most ``size`` items; the first has at most ``first_size`` (a canary)."""
    check_chunk_size(size)
    limit = size if not first_size else min(check_chunk_size(first_size, key="canary_size"), size)
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= limit:
            yield chunk
            chunk = []
            limit = size
    if chunk:
        yield chunk

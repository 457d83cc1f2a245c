"""The rows that have a record of their own, for the merge scan (:mod:`.merges`): the rows
the first pass of :func:`recordsync.prepare.digests.prepare_digested` found in the last run's
snapshot and did not demote. Asked batch by batch as the merge scan reads the source again,
in the same order: the first pass's log (:class:`.seen_log.SeenLog`) is walked forward with
the questions, so that only about a batch of identities is held, never one per source row.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from recordsync.prepare.dups import ROW_BITS
from recordsync.prepare.seen_log import Seen, SeenLog

_NONE = np.zeros(0, dtype=np.int64)


class SnapshotOwners:
    """Which row identities (``file index << ROW_BITS | row``) were found in the snapshot and
    not demoted. Questions come in source order (each batch's identities above the last
    batch's): the log is read forward once. A question out of that order, or a log whose
    identities do not rise, is still answered right: from every identity at once (8 bytes a
    row, as before this walk)."""

    def __init__(
        self, seen: SeenLog, files: dict[str, int], demoted: npt.NDArray[np.int64]
    ) -> None:
        self._seen = seen
        self._files = files
        self._demoted = demoted
        self._it: Iterator[Seen] | None = None
        self._held = _NONE  # identities read from the log, above the last question's
        self._top = -1  # the highest identity read from the log so far
        self._floor = -1  # identities below this were dropped: a question there restarts
        self._done = False
        self._all: npt.NDArray[np.int64] | None = None  # every identity, sorted (fallback)

    def member(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Per identity in ``ids``: whether its row has a record of its own."""
        if not len(ids):
            return np.zeros(0, dtype=bool)
        if self._all is None:
            lo, hi = int(ids.min()), int(ids.max())
            if lo < self._floor:
                self._restart()
            while not self._done and self._top <= hi and self._all is None:
                self._pull()
        if self._all is not None:
            return _member(ids, self._all)
        got = _member(ids, self._held)
        self._floor = hi + 1
        self._held = self._held[self._held >= self._floor]
        return got

    def everything(self) -> npt.NDArray[np.int64]:
        """Every identity, sorted (the fallback; also for tests)."""
        self.close()
        parts = [self._owned(s) for s in self._seen]
        return np.sort(np.concatenate([_NONE, *parts]))

    def close(self) -> None:
        """Stop the walk (the log's file is left for the second pass)."""
        if self._it is not None:
            close = getattr(self._it, "close", None)
            if close is not None:
                close()  # a batch read from the log's file is unloaded now, not later
            self._it = None

    def _restart(self) -> None:
        self.close()
        self._held, self._top, self._floor, self._done = _NONE, -1, -1, False

    def _pull(self) -> None:
        if self._it is None:
            self._it = iter(self._seen)
        s = next(self._it, None)
        if s is None:
            self._done = True
            self.close()
            return
        fidx = np.int64(self._files[s.file]) << ROW_BITS
        ids = fidx | s.rows
        if len(ids):
            if int(ids.min()) <= self._top or bool((ids[1:] < ids[:-1]).any()):
                self._all = self.everything()  # not in rising order: all at once
                return
            self._top = int(ids.max())
        owned = self._owned(s)
        self._held = np.concatenate([self._held, owned]) if len(self._held) else owned

    def _owned(self, s: Seen) -> npt.NDArray[np.int64]:
        ids = (np.int64(self._files[s.file]) << ROW_BITS) | s.rows[s.found >= 0]
        if len(self._demoted) and len(ids):
            ids = ids[~np.isin(ids, self._demoted)]
        return np.asarray(ids, dtype=np.int64)


def _member(values: npt.NDArray[np.int64], ordered: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which ``values`` are in ``ordered`` (sorted)."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return np.asarray(ordered[at] == values)

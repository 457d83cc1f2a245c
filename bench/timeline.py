"""Where a client's wall time goes, from the server's side (for bench_run.py).

The no-op server notes when each request arrived and when its answer left
(noop_server.py, ``GET /_timeline``); the launcher notes when the client was spawned and
reaped (measure.py). All on ``time.monotonic()``, one clock for the whole machine, so the
client's wall time splits into:

- ``start``: spawn to the first request of any kind (start-up, reading the pipeline, ...);
- ``first``: spawn to the first batch request (``start`` plus what runs before the first
  chunk goes out: the schema and users fetched, the first rows read, mapped, checked);
- ``gaps``: from each batch's answer leaving the server to the next batch arriving (what the
  client does between an answer and its next request, besides the request itself);
- ``trips``: each batch's arrival to its answer (the server's wait, the same for every
  client);
- ``tail``: the last answer to the reaping (the report, the end of the run, exit).

``start + (first - start) + sum(trips) + sum(gaps) + tail`` is the wall time (up to the
time a request takes on the wire). Unlike a ratio of wall times, the gaps hardly move
with the machine's load for a client that overlaps its work with the server's wait: they
are what such a client can still cut.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from itertools import pairwise

BATCH = "/batch"


@dataclass(frozen=True)
class Split:
    start: float
    """Seconds from the spawn to the first request."""
    first: float
    """Seconds from the spawn to the first batch request."""
    gaps: list[float]
    """Seconds from each batch's answer to the next batch's arrival."""
    trips: float
    """Seconds the server held the batches (arrival to answer), in all."""
    tail: float
    """Seconds from the last answer to the reaping."""

    @property
    def prepare(self) -> float:
        """Seconds from the first request to the first batch (what runs before the first
        chunk goes out once the client talks to the server)."""
        return self.first - self.start

    @property
    def gap_total(self) -> float:
        return sum(self.gaps)

    @property
    def gap_median_ms(self) -> float:
        return statistics.median(self.gaps) * 1000 if self.gaps else 0.0

    @property
    def gap_p90_ms(self) -> float:
        if len(self.gaps) < 2:
            return self.gap_median_ms
        return statistics.quantiles(self.gaps, n=10)[-1] * 1000


def split(events: list[tuple[str, float, float]], started: float, ended: float) -> Split:
    """``events``: the server's timeline for one client (noop_server.timeline);
    ``started``/``ended``: the client's spawn and reaping (measure.Measured)."""
    if not events:
        raise ValueError("the server saw no request")
    batches = [(a, b) for what, a, b in events if what.endswith(BATCH) and not math.isnan(b)]
    if not batches:
        raise ValueError("the server saw no batch request")
    gaps = [nxt[0] - prev[1] for prev, nxt in pairwise(batches)]
    last = max(b for _, _, b in events if not math.isnan(b))
    return Split(
        start=events[0][1] - started,
        first=batches[0][0] - started,
        gaps=gaps,
        trips=sum(b - a for a, b in batches),
        tail=ended - last,
    )


def line(s: Split) -> str:
    """One split, as bench_run.py prints it beside a run."""
    return (
        f"to first request {s.start:.3f} s, to first batch {s.first:.3f} s (+{s.prepare:.3f}), gaps"
        f" {s.gap_total:.3f} s (median {s.gap_median_ms:.2f} ms, p90 {s.gap_p90_ms:.2f} ms,"
        f" {len(s.gaps)}), server wait {s.trips:.2f} s, tail {s.tail:.3f} s"
    )

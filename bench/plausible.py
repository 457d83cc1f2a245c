"""Is a benchmark's baseline plausible? Checked before a benchmark prints a verdict.

A ratio against a baseline says nothing when the baseline itself is broken: when a server
stalls every answer (Nagle's algorithm against a delayed ACK, ~40 ms a round trip on this
machine), a fast client and a slow one wait on the same stall and their ratio is near 1; when
a server meant to wait 20 ms an answer does not, the "share of the limit" is meaningless.
So the bare loop times its own round trips (bare_loop.py, its clock running from the first
request to the last answer: no start-up), and each kind of server has a known range:

- ``noop`` (answers at once): median round trip below ``NOOP_MAX_MS``; a stalled one takes
  40 ms or more, a quiet one 1-2 ms, one at load 6 on two cores under 10;
- ``slow`` (answers after ``delay_ms``): at least ``delay_ms`` (else the delay was not
  applied) and less than ``delay_ms + SLOW_EXTRA_MS`` (else something stalls on top);
- ``sandbox`` (stores every entry): below ``SANDBOX_MAX_MS``. Only a floor for gross faults:
  the sandbox stores 100 contacts in ~5 ms on a quiet machine but in 30-60 ms at load 11, so a
  40 ms stall cannot be told from load here; its server sets ``TCP_NODELAY`` itself
  (recordsync.sandbox.server, asyncio's own listening sockets in project.sandbox).

The first request is left out of the median when there are more (connection set-up, first
use). The bounds are wide on purpose (the machine is shared) yet a stall into the no-op server
cannot pass them.
"""

from __future__ import annotations

from dataclasses import dataclass

NOOP_MAX_MS = 30.0
SANDBOX_MAX_MS = 100.0
SLOW_EXTRA_MS = 25.0


@dataclass(frozen=True)
class LoopTiming:
    """What bare_loop.py wrote: requests sent, seconds from the first to the last answer,
    the median round trip in ms."""

    requests: int
    seconds: float
    median_ms: float

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def check_bare(server: str, timing: LoopTiming, delay_ms: float = 0.0) -> str | None:
    """None when the bare loop's figures are plausible for ``server``, else why not."""
    got = (
        f"the bare loop's median round trip into the {server} server was"
        f" {timing.median_ms:.1f} ms ({timing.requests} requests, {timing.per_second:.0f}/s)"
    )
    if timing.requests == 0:
        return f"the bare loop sent no request into the {server} server"
    if server == "noop" and timing.median_ms >= NOOP_MAX_MS:
        return f"{got}, at least {NOOP_MAX_MS:.0f} ms: a stalled server (TCP_NODELAY?)"
    if server == "sandbox" and timing.median_ms >= SANDBOX_MAX_MS:
        return f"{got}, at least {SANDBOX_MAX_MS:.0f} ms: a stalled or overloaded server"
    if server == "slow":
        if timing.median_ms < delay_ms:
            return f"{got}, under the {delay_ms:.0f} ms the server should wait: no delay applied"
        if timing.median_ms >= delay_ms + SLOW_EXTRA_MS:
            return (
                f"{got}, {SLOW_EXTRA_MS:.0f} ms or more over the {delay_ms:.0f} ms delay:"
                " something stalls on top of it (TCP_NODELAY?)"
            )
    return None

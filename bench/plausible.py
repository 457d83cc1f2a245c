"""Is a benchmark's baseline plausible? Checked before a benchmark prints a verdict.

A ratio against a baseline says nothing when the baseline itself is broken: when a server
stalls every answer (Nagle's algorithm against the client's delayed ACK, ~44 ms a round trip
on this machine), a fast client and a slow one wait on the same stall and their ratio is near
1; when a server meant to wait 20 ms an answer does not, the "share of the limit" means
nothing. Two kinds of check, on what the bare loop measured itself (bare_loop.py: its own
clock from the first request to the last answer, no start-up) and on what the server says:

- :func:`broken`, which stops the benchmark: the no-op server's connections without
  ``TCP_NODELAY`` (the server reports it: ``/_counts``'s ``nodelay``), a bare loop that sent
  nothing, a slow server whose round trips are shorter than its delay (it did not wait). None
  of these depends on the machine's load: a loaded machine only makes round trips longer.
- :func:`below_floor`, which withholds the verdicts (the figures are still printed): the bare
  loop's requests per second under a known floor for that server (:data:`FLOORS`), as on an
  overloaded machine, where every side waits for a core more than for the service and a
  ratio says more about the load than about the clients. Quiet, this machine does 500-700
  requests/s into the no-op server, ~200 into the sandbox, ~45 at 20 ms an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOORS = {"noop": 150.0, "sandbox": 40.0, "slow": 0.6}
"""Requests per second of the bare loop, at least (``slow``: that share of 1 / delay)."""


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


def broken(
    server: str, timing: LoopTiming, delay_ms: float = 0.0, nodelay: list[int] | None = None
) -> str | None:
    """Why the baseline into ``server`` cannot be used at all, or None. ``nodelay``: what
    the no-op server reported for its connections (None: not a no-op server)."""
    if timing.requests == 0:
        return f"the bare loop sent no request into the {server} server"
    if nodelay is not None and (not nodelay or 0 in nodelay):
        return (
            f"the {server} server's connections lack TCP_NODELAY ({nodelay}): every answer"
            " waits for the client's delayed ACK"
        )
    if server == "slow" and timing.median_ms < delay_ms:
        return (
            f"the bare loop's median round trip into the slow server was"
            f" {timing.median_ms:.1f} ms, under the {delay_ms:g} ms it should wait: no delay"
        )
    return None


def below_floor(server: str, timing: LoopTiming, delay_ms: float = 0.0) -> str | None:
    """Why no verdict should be drawn from this baseline (the machine too loaded), or None."""
    floor = FLOORS[server] * (1000 / delay_ms if server == "slow" and delay_ms else 1)
    if timing.per_second >= floor:
        return None
    return (
        f"the bare loop did {timing.per_second:.0f} requests/s into the {server} server, under"
        f" its floor of {floor:.0f}/s (median round trip {timing.median_ms:.1f} ms)"
    )

"""How long to wait before resending, and when to stop (bounded exponential backoff, jitter).

The sleep function, the clock and the random source are injectable so that tests run instantly
and deterministically.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from recordsync.send.http_policy import Verdict


@dataclass(slots=True)
class RetryPolicy:
    """``max_attempts`` counts every try of one request (the first included).

    Waits grow as ``base_delay * 2**(n-1)``, capped at ``max_delay``, with "equal jitter"
    (a random value between half and all of it). A 429 waits what ``Retry-After`` says (capped
    at ``max_retry_after``) and has its own budget, ``max_rate_limited``, because a rate limit
    is the service pacing us, not failing.
    """

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_rate_limited: int = 20
    max_retry_after: float = 300.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=lambda: random.Random(0x5EED))

    def backoff(self, attempt: int) -> float:
        """Wait after the ``attempt``-th failed try (1-based)."""
        ceiling = min(self.max_delay, self.base_delay * (2.0 ** (attempt - 1)))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def wait_for(self, verdict: Verdict, attempt: int) -> float:
        if verdict.retry_after is not None:
            return min(verdict.retry_after, self.max_retry_after)
        return self.backoff(attempt)


@dataclass(slots=True)
class RetryBudget:
    """Counts the tries of one request against a :class:`RetryPolicy`."""

    policy: RetryPolicy
    failures: int = 0
    rate_limited: int = 0
    waited: float = 0.0

    def next_wait(self, verdict: Verdict) -> float | None:
        """Seconds to wait before the next try, or None when the budget is spent."""
        if verdict.kind == "rate_limited":
            self.rate_limited += 1
            if self.rate_limited > self.policy.max_rate_limited:
                return None
            return self.policy.wait_for(verdict, self.rate_limited)
        self.failures += 1
        if self.failures >= self.policy.max_attempts:
            return None
        return self.policy.wait_for(verdict, self.failures)

    def wait(self, seconds: float) -> None:
        self.waited += seconds
        if seconds > 0:
            self.policy.sleep(seconds)

    @property
    def attempts(self) -> int:
        return self.failures + self.rate_limited + 1

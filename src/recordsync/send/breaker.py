"""Circuit breakers: stop a run that is clearly going wrong before it does more damage.

- failure rate: once at least ``min_rows`` rows were sent in the run, a share of ``failed``
  above ``max_failure_rate`` stops the run (``in_doubt`` rows are not failures: the service
  took the request and its answer was lost; they are settled or held for review);
- creates: more than ``max_creates`` records created in the run stops it (a mapping that
  creates where it should update, e.g. a lost match key, shows up here first).

Both are checked after every chunk; a trip raises :class:`recordsync.core.errors.RunAborted`.
"""

from __future__ import annotations

from dataclasses import dataclass

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RunAborted
from recordsync.core.model import RowStatus


@dataclass(slots=True)
class CircuitBreaker:
    max_failure_rate: float | None = None
    min_rows: int = 10
    max_creates: int | None = None
    sent: int = 0
    failed: int = 0
    created: int = 0

    def observe(self, results: list[EntryResult]) -> None:
        statuses = [r.status for r in results]
        self.sent += len(statuses)
        self.failed += statuses.count(RowStatus.FAILED)
        self.created += statuses.count(RowStatus.CREATED)

    def check(self, where: str) -> None:
        """Raise RunAborted when a limit is passed; ``where`` names the chunk."""
        if self.max_creates is not None and self.created > self.max_creates:
            raise RunAborted(
                f"circuit breaker: {self.created} records created, more than max_creates="
                f"{self.max_creates} (after {where})",
                hint="check the mapping's match_by keys; raise send.circuit_breaker.max_creates "
                "in the pipeline if this many creates are expected",
            )
        if (
            self.max_failure_rate is not None
            and self.sent >= self.min_rows
            and self.failed / self.sent > self.max_failure_rate
        ):
            raise RunAborted(
                f"circuit breaker: {self.failed} of {self.sent} rows sent failed "
                f"({self.failed / self.sent:.0%} > max_failure_rate "
                f"{self.max_failure_rate:.0%}) (after {where})",
                hint="see failures.csv for the reasons; fix them and run again or "
                "`recordsync retry` the report",
            )

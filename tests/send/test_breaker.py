"""The circuit breaker counts failed rows; rows held in doubt are not failures."""

import pytest

from recordsync.core.chunk_report import EntryResult
from recordsync.core.errors import RunAborted
from recordsync.core.model import RowStatus
from recordsync.send.breaker import CircuitBreaker


def test_in_doubt_rows_do_not_trip_the_failure_rate() -> None:
    breaker = CircuitBreaker(max_failure_rate=0.2, min_rows=10)
    breaker.observe([EntryResult(RowStatus.IN_DOUBT, None, "in doubt: ...")] * 20)
    breaker.check("chunk s#1, source row 2")
    assert breaker.failed == 0 and breaker.sent == 20


def test_failed_rows_trip_it() -> None:
    breaker = CircuitBreaker(max_failure_rate=0.2, min_rows=10)
    breaker.observe([EntryResult(RowStatus.FAILED, None, "x")] * 5)
    breaker.observe([EntryResult(RowStatus.CREATED, 1)] * 5)
    with pytest.raises(RunAborted, match="5 of 10 rows sent failed"):
        breaker.check("chunk s#2, source row 7")

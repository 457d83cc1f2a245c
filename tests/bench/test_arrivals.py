"""bench/arrivals.py reads what arrived at the sandbox and fails loudly on a missing row."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.bench.support import load
from tests.e2e.support import KEY, served


def test_a_row_missing_from_the_sandbox_fails_the_check(tmp_path: Path) -> None:
    arrivals = load("arrivals")
    emails = {f"r{i}@bench.example" for i in range(3)}
    objects = [
        {"name": e, "match_by": "email", "match_value": e, "fields": {"email": e}}
        for e in sorted(emails)[:2]
    ]
    db = tmp_path / "s.db"
    with served(db) as url:
        r = httpx.post(
            url + "/api/objects/contacts/batch",
            json={"objects": objects},
            headers={"x-api-key": KEY},
            timeout=60,
        )
        assert r.status_code == 200
    arrivals.check_sandbox(db, set(sorted(emails)[:2]), "two rows")
    with pytest.raises(arrivals.ArrivalError, match="1 source rows missing"):
        arrivals.check_sandbox(db, emails, "three rows")
    assert arrivals.sandbox_changes(db)[0] == 2
    assert arrivals.records_holding(db, "r1@bench") == 1

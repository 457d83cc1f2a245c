"""``change_detection: database`` and ``incremental`` in a mapping's source: what they take,
and errors that name the key and what to do (recordsync.config.incremental)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.config.incremental import seconds
from recordsync.core.errors import ConfigError, exit_code_for

HEAD = "object_type: contacts\nname: {column: name}\n"
PG = "  engine: postgres\n  dsn_env: CRM_DSN\n  query: SELECT * FROM people\n  key: id\n"


def _load(tmp_path: Path, source: str, rest: str = "") -> Any:
    p = tmp_path / "m.yaml"
    p.write_text(HEAD + "source:\n" + source + rest, encoding="utf-8")
    return load_mapping(p)


def _error(tmp_path: Path, source: str, rest: str = "") -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, source, rest)
    assert exit_code_for(info.value) == 2
    text = str(info.value)
    assert "m.yaml" in text
    return text


def test_database_change_detection_on_a_query(tmp_path: Path) -> None:
    duck = "  query: SELECT 1 AS id\n  key: id\n  change_detection: database\n"
    assert _load(tmp_path, duck).source.change_detection == "database"
    m = _load(tmp_path, PG + "  change_detection: database\n  state_schema: sync_state\n")
    assert m.source.change_detection == "database"
    assert m.source.state_schema == "sync_state"
    assert _load(tmp_path, PG).source.change_detection == "client"  # the default
    assert _load(tmp_path, PG).source.state_schema == "recordsync"


def test_database_change_detection_is_refused_where_it_cannot_work(tmp_path: Path) -> None:
    text = _error(tmp_path, "  path: people.csv\n  change_detection: database\n")
    assert "only for a 'query' source" in text
    both = PG + "  change_detection: database\n  incremental: {cursor: updated_at}\n"
    assert "not both" in _error(tmp_path, both)
    two = PG.replace("key: id", "key: [a, b]") + "  change_detection: database\n"
    assert "one-column 'key'" in _error(tmp_path, two)
    lk = "ledger_key: {column: id, normalize: lower}\n"
    assert "without normalize" in _error(tmp_path, PG + "  change_detection: database\n", lk)
    bad = PG + "  change_detection: database\n  state_schema: Bad-Name\n"
    assert "state_schema 'Bad-Name'" in _error(tmp_path, bad)
    assert "change_detection" in _error(tmp_path, PG + "  change_detection: warehouse\n")


def test_incremental_takes_durations(tmp_path: Path) -> None:
    inc = "  incremental: {cursor: updated_at, lookback: 2h, full_check_every: 1w}\n"
    got = _load(tmp_path, PG + inc).source.incremental
    assert (got.cursor, got.lookback, got.full_check_every) == ("updated_at", 7200, 604_800)
    plain = _load(tmp_path, PG + "  incremental: {cursor: version}\n").source.incremental
    assert (plain.lookback, plain.full_check_every) == (900, 604_800)  # 15m, 7d


def test_incremental_errors_name_the_key(tmp_path: Path) -> None:
    text = _error(tmp_path, PG + "  incremental: {cursor: updated_at, lookback: soon}\n")
    assert "incremental.lookback" in text and "15m" in text
    text = _error(tmp_path, PG + "  incremental: {cursor: updated_at, full_check_every: 0}\n")
    assert "incremental.full_check_every" in text
    assert "cursor" in _error(tmp_path, PG + "  incremental: {lookback: 15m}\n")
    assert "unknown" in _error(tmp_path, PG + "  incremental: {cursor: a, look_back: 1m}\n")
    text = _error(tmp_path, "  path: people.csv\n  incremental: {cursor: updated_at}\n")
    assert "incremental" in text and "only for a 'query' source" in text


@given(st.integers(0, 10**6), st.sampled_from(["s", "m", "h", "d", "w", ""]))
def test_a_duration_reads_as_its_seconds(n: int, unit: str) -> None:
    factor = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800, "": 1}[unit]
    assert seconds(f"{n}{unit}", "x") == n * factor
    assert seconds(n, "x") == n

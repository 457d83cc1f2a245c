"""Dates round-trip through ``recordsync retry``: a Parquet timestamp column mapped into date
and datetime fields gives the same values (and the same rows not ok) as the text failures.csv
writes for it, read back by the mapping as ``retry`` reads it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordsync.config import load_mapping
from recordsync.config.models import SourceConfig
from recordsync.core.model import PreparedRow, RowStatus, SourceRow
from recordsync.map.engine import BatchMapper
from recordsync.read import iter_source
from recordsync.report.tally import StepTally
from recordsync.report.writer import ReportWriter
from recordsync.run.retry import split_failures
from recordsync.validate.schema import Schema

SPECS = {
    "close_date": '{column: Closed, date_format: "%Y-%m-%d %H:%M:%S"}',
    "start_date": "Closed",
    "seen_at": "Closed",
    "touched_at": '{column: Closed, datetime_format: "%Y-%m-%d %H:%M:%S"}',
}
"""One mapping per field (a row's error names its first refused field only)."""
FIELDS = ("close_date", "start_date", "seen_at", "touched_at")
SCHEMA = Schema.from_api(
    [
        {
            "slug": "deals",
            "fields": [
                {"field_name": name, "field_type": kind}
                for name, kind in zip(FIELDS, ("date", "date", "datetime", "datetime"), strict=True)
            ],
        }
    ]
)
STEP = {"s": 1_000_000, "ms": 1000, "us": 1}
"""Microseconds per tick of each unit: the fractions a unit can hold."""


def mapper(tmp_path: Path, field: str) -> BatchMapper:
    text = "object_type: deals\nsource: {path: x.parquet}\nname: Name\nfields:\n"
    (tmp_path / f"{field}.yaml").write_text(f"{text}  {field}: {SPECS[field]}\n")
    return BatchMapper(
        load_mapping(tmp_path / f"{field}.yaml"), base_dir=tmp_path, schema=SCHEMA, users=None
    )


def mapped(tmp_path: Path, batch: pa.RecordBatch) -> list[tuple[dict[str, Any], list[str]]]:
    """Per row: the mapped fields, and the fields whose value was refused."""
    rows: list[tuple[dict[str, Any], list[str]]] = [({}, []) for _ in range(batch.num_rows)]
    for field in FIELDS:
        out = mapper(tmp_path, field).map_batch(batch)
        for (fields, refused), payload, error in zip(rows, out.payloads, out.errors, strict=True):
            if error is not None:
                refused.append(field)
            else:
                assert payload is not None
                fields[field] = payload["fields"][field]
    return rows


def failures_text(tmp_path: Path, batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch as retry reads it back: failures.csv written by the report writer from the
    rows' values as read (Python objects), split per step, read by the CSV reader."""
    writer = ReportWriter(tmp_path / "run", dry_run=False)
    tally = StepTally("deals", "m.yaml", "deals")
    writer.start_step(tally)
    for n, values in enumerate(batch.to_pylist(), start=1):
        row = PreparedRow(SourceRow("x.parquet", n, values), RowStatus.VALID, {})
        writer.record(tally, row, RowStatus.FAILED, None, "HTTP 502: bad gateway")
    writer.finish({"run_id": "r1"})
    (tmp_path / "tmp").mkdir()
    [(path, _)] = split_failures(tmp_path / "run", tmp_path / "tmp").values()
    [read] = list(iter_source(SourceConfig(path=str(path)), tmp_path / "tmp"))
    return read.batch


INSTANTS = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 12, 31))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    unit=st.sampled_from(sorted(STEP)),
    zone=st.sampled_from([None, "UTC"]),
    instants=st.lists(st.tuples(INSTANTS, st.booleans()), min_size=1, max_size=5),
)
def test_failures_csv_dates_map_back_to_the_same_values(
    tmp_path_factory: pytest.TempPathFactory,
    unit: str,
    zone: str | None,
    instants: list[tuple[datetime, bool]],
) -> None:
    root = tmp_path_factory.mktemp("dates")
    values = []
    for when, midnight in instants:
        when = when.replace(microsecond=when.microsecond - when.microsecond % STEP[unit])
        if midnight:
            when = when.replace(hour=0, minute=0, second=0, microsecond=0)
        values.append(when.replace(tzinfo=UTC) if zone else when)
    batch = pa.RecordBatch.from_pydict(
        {
            "Name": [f"deal {i}" for i in range(len(values))],
            "Closed": pa.array(values, pa.timestamp(unit, zone)),
        }
    )
    typed = mapped(root, batch)
    assert mapped(root, failures_text(root, batch)) == typed
    for (fields, refused), when in zip(typed, values, strict=True):
        if zone is None:  # a seconds-only format reads any fraction (the column's unit)
            assert fields["close_date"] == when.date().isoformat()
            assert "close_date" not in refused and "touched_at" not in refused
        midnight = when.time() == datetime.min.time()
        assert ("start_date" in refused) is not midnight  # a date: only the midnight ones


def test_a_millisecond_timestamp_into_a_date_field_with_a_seconds_format_is_valid(
    tmp_path: Path,
) -> None:
    """``1996-07-04 00:00:00.000`` (a unit of ms) with ``date_format: '%Y-%m-%d %H:%M:%S'``:
    no error quoting a value that matches the format."""
    when = datetime(1996, 7, 4) + timedelta(milliseconds=0)
    batch = pa.RecordBatch.from_pydict(
        {"Name": ["a", "b"], "Closed": pa.array([when, when.replace(second=5)], pa.timestamp("ms"))}
    )
    [(one, refused_one), (two, refused_two)] = mapped(tmp_path, batch)
    assert one["close_date"] == "1996-07-04" and one["start_date"] == "1996-07-04"
    assert refused_one == []
    assert two["close_date"] == "1996-07-04" and refused_two == ["start_date"]
    out = mapper(tmp_path, "start_date").map_batch(batch)
    assert "'1996-07-04 00:00:05' is not a date" in (out.errors[1] or "")

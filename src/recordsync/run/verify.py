"""Read-back verification: after each step, a sample of the records the step wrote (and of
rows it found unchanged) is read back by id (``GET /api/objects/{type}?id=``, one request a
record, through :class:`recordsync.send.readback.NameReader`) and compared with what was sent
(:mod:`recordsync.run.compare`). A record that differs is a mismatch: another writer changed
it, a rule of the service rewrote a value, or an update was lost. Each differing field is a
line of ``readback_mismatches.csv``; more than ``max_mismatch`` records that differ in a step
make the run exit 1. A record that cannot be read (the service is down, it has no read
endpoint) is counted ``unreadable``: a warning, not a mismatch.

The sample is drawn as rows stream (:class:`recordsync.run.written.WrittenRecords`); a row
found unchanged from its digest alone was never mapped in this run: the first pass over the
source kept the cells of a sample of those rows (:mod:`recordsync.prepare.cell_sample`), which
are mapped here (``remap``) to know what their record should hold (the source is not read
again); fields that are references (``ref:``, resolved from the state store) are not
compared for those rows.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from recordsync.config.after_run import VerifySettings
from recordsync.config.models import MappingConfig
from recordsync.core.errors import RecordsyncError
from recordsync.core.model import StepPlan
from recordsync.map.engine import BatchMapper
from recordsync.report.csvsafe import neutralise
from recordsync.run.compare import differences, expected_values, shown
from recordsync.run.written import Sampled, WrittenRecords
from recordsync.send.client import RecordServiceClient
from recordsync.send.readback import Gone, NameReader, Unreadable
from recordsync.validate.schema import Schema

log = logging.getLogger(__name__)

MISMATCH_FILE = "readback_mismatches.csv"
MISMATCH_COLUMNS = (
    "step",
    "source_file",
    "source_row",
    "status",
    "record_id",
    "field",
    "sent",
    "stored",
)
READERS = 4
"""Records read back at once (the read-back's requests are independent reads)."""
EXAMPLES = 10
"""Differing fields shown per step in report.md and summary.json (the CSV has them all)."""

Remap = Callable[[list[Any]], list[dict[str, Any] | None]]
"""Rows' cells (one-row Arrow batches of the step's source) → the batch input the step's
mapping makes of each (None: it makes none)."""


def remapper(mapping: MappingConfig, base_dir: Path, schema: Schema | None, users: Any) -> Remap:
    """The step's :data:`Remap` (its mapper made when first used; rows of one shape mapped as
    one batch); reference fields are left out: the state store resolves them, not the
    mapping."""
    refs = {name for name, spec in mapping.fields.items() if spec.ref is not None}
    mappers: list[BatchMapper] = []

    def payloads(batch: pa.RecordBatch) -> list[dict[str, Any] | None]:
        if not mappers:
            mappers.append(BatchMapper(mapping, base_dir=base_dir, schema=schema, users=users))
        mapped = mappers[0].map_batch(batch)
        out: list[dict[str, Any] | None] = []
        for payload, error in zip(mapped.payloads, mapped.errors, strict=True):
            fields = payload.get("fields") if payload and error is None else None
            if payload and refs and isinstance(fields, dict):
                payload = {**payload, "fields": {k: v for k, v in fields.items() if k not in refs}}
            out.append(payload if payload and error is None else None)
        return out

    def remap(cells: list[Any]) -> list[dict[str, Any] | None]:
        if not cells:
            return []
        try:
            batch = pa.Table.from_batches(cells).combine_chunks().to_batches()[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError, IndexError):  # shapes differ (files)
            return [p for c in cells for p in payloads(c)]
        return payloads(batch)

    return remap


@dataclass(slots=True)
class StepCheck:
    """What reading back one step's sample found."""

    step: str
    object_type: str
    sample: int
    max_mismatch: int
    written: int = 0
    """Records of rows the step created or updated, read back."""
    unchanged: int = 0
    """Records of rows found unchanged, read back."""
    mismatched: int = 0
    """Records that differ from what was sent (or are gone)."""
    fields: int = 0
    unreadable: int = 0
    problems: list[str] = field(default_factory=list)
    lines: list[tuple[Any, ...]] = field(default_factory=list)
    """``readback_mismatches.csv`` lines (:data:`MISMATCH_COLUMNS`)."""

    @property
    def failed(self) -> bool:
        return self.mismatched > self.max_mismatch

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "object_type": self.object_type,
            "sample": self.sample,
            "records_read": self.written + self.unchanged,
            "written_read": self.written,
            "unchanged_read": self.unchanged,
            "mismatched_records": self.mismatched,
            "mismatched_fields": self.fields,
            "max_mismatch": self.max_mismatch,
            "unreadable": self.unreadable,
            "failed": self.failed,
            "problems": self.problems[:EXAMPLES],
            "examples": [_example(line) for line in self.lines[:EXAMPLES]],
        }


def _example(line: tuple[Any, ...]) -> str:
    _, file, row, status, rid, name, sent, stored = line
    return f"{file}:{row} ({status}, record {rid}) {name}: sent {sent}, stored {stored}"


class ReadBack:
    """The read-back of one run: its sampler (the step runner's observer) and each step's
    check, run once the step is over."""

    def __init__(
        self,
        client: RecordServiceClient,
        settings: Mapping[str, VerifySettings],
        schema: Schema | None,
        remaps: Mapping[str, Remap] | None = None,
        *,
        shared: set[str] | None = None,
        off: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.off = off
        """Why nothing is read back (None: some step is)."""
        self.client = client
        self.settings = dict(settings)
        self.schema = schema
        self.remaps = dict(remaps or {})
        sizes = {s: v.sample for s, v in self.settings.items() if v.enabled}
        self.watch = WrittenRecords(sizes, shared=shared, seed=seed)
        self.checks: list[StepCheck] = []
        self.requests = 0
        self.seconds = 0.0
        """Wall time spent reading back and comparing."""

    def after_step(self, plan: StepPlan) -> StepCheck | None:
        """Read back the step's sample; None when the step is not verified."""
        settings = self.settings.get(plan.name)
        if settings is None or not settings.enabled or not settings.sample:
            return None
        started = time.perf_counter()
        check = StepCheck(plan.name, plan.object_type, settings.sample, settings.max_mismatch)
        object_type = self.schema.object_type(plan.object_type) if self.schema else None
        sample = self.watch.sample(plan.name)
        skipped = self.watch.shared_skipped.get(plan.name)
        if skipped:
            check.problems.append(
                f"{skipped} row(s) found unchanged not compared: another row of the step "
                "(merges: expected) holds the same record"
            )
        self._remap(check, [s for s in sample if s.payload is None])
        ready = [s for s in sample if s.payload is not None]
        with ThreadPoolExecutor(READERS, "recordsync-readback") as pool:
            read = list(pool.map(partial(_read, self.client, plan.object_type), ready))
        for s, (record, tries) in zip(ready, read, strict=True):
            self.requests += tries
            self._check_one(check, object_type, s, record)
        self.watch.forget(plan.name)
        self.checks.append(check)
        self.seconds += time.perf_counter() - started
        if check.mismatched:
            log.warning(
                "step %s: %d of %d records read back differ from what was sent (see %s)",
                plan.name,
                check.mismatched,
                check.written + check.unchanged,
                MISMATCH_FILE,
            )
        return check

    def _check_one(
        self, check: StepCheck, object_type: Any, s: Sampled, record: dict[str, Any] | str | None
    ) -> None:
        """Compare ``s`` with its record as read (None: gone; a text: why it is unreadable)."""
        assert s.payload is not None
        if isinstance(record, str):
            check.unreadable += 1
            check.problems.append(f"record {s.record_id}: {record}")
            return
        expected = expected_values([s.payload, *s.later])
        if s.status == "unchanged":
            check.unchanged += 1
        else:
            check.written += 1
        where = (check.step, s.source_file, s.source_row, s.status, s.record_id)
        if record is None:
            check.mismatched += 1
            check.fields += 1
            check.lines.append((*where, "(record)", "", "(not found: deleted since?)"))
            return
        diffs = differences(expected, record, object_type)
        if diffs:
            check.mismatched += 1
            check.fields += len(diffs)
            for d in diffs:
                check.lines.append((*where, d.field, shown(d.sent), shown(d.stored)))

    def _remap(self, check: StepCheck, rows: list[Sampled]) -> None:
        """What rows found unchanged from their digests should hold: their cells mapped
        (their ``payload`` set; a row that cannot be is left out, with a problem noted)."""
        remap = self.remaps.get(check.step)
        rows = [s for s in rows if s.cells is not None]
        if remap is None or not rows:
            return
        try:
            got = remap([s.cells for s in rows])
        except RecordsyncError as exc:
            check.problems.append(f"rows found unchanged could not be mapped: {exc}")
            return
        for s, payload in zip(rows, got, strict=True):
            s.payload = payload
            if payload is None:
                check.problems.append(f"{s.source_file}:{s.source_row}: not mapped")

    @property
    def failed(self) -> bool:
        return any(c.failed for c in self.checks)

    def summary(self, directory: Path) -> dict[str, Any]:
        """``verify`` of summary.json; writes ``readback_mismatches.csv`` into ``directory``
        when a record differed."""
        if self.off is not None:
            return not_verified(self.off)
        lines = [line for c in self.checks for line in c.lines]
        if lines:
            write_mismatches(directory / MISMATCH_FILE, lines)
        return {
            "enabled": True,
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "records_read": sum(c.written + c.unchanged for c in self.checks),
            "mismatched_records": sum(c.mismatched for c in self.checks),
            "mismatched_fields": sum(c.fields for c in self.checks),
            "unreadable": sum(c.unreadable for c in self.checks),
            "failed": self.failed,
            "file": MISMATCH_FILE if lines else None,
            "steps": [c.as_json() for c in self.checks],
        }


def _read(
    client: RecordServiceClient, object_type: str, s: Sampled
) -> tuple[dict[str, Any] | str | None, int]:
    """Record ``s.record_id`` as read (None: gone; a text: why it could not be read) and the
    requests that took (a reader of its own: this runs on the pool's threads)."""
    reader = NameReader(client, object_type)
    try:
        return reader.record(s.record_id), reader.tries
    except Gone:
        return None, reader.tries
    except Unreadable as exc:
        return str(exc), reader.tries


def write_mismatches(path: Path, lines: list[tuple[Any, ...]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(MISMATCH_COLUMNS)
        for line in lines:
            writer.writerow([neutralise(str(c)) for c in line])


def not_verified(why: str) -> dict[str, Any]:
    """``verify`` of summary.json for a run that read nothing back, and why."""
    return {"enabled": False, "why": why}

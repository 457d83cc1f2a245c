"""Write ``reports/<run_id>/`` while the run streams: one results line per source row.

    summary.json   run, target, steps with counts, totals, accounting check, the row files
    results.csv    one line per source row (model.RESULTS_COLUMNS); rows found unchanged
                   are counted, and listed only with ``list_unchanged``
    failures.csv   failed, invalid, in-doubt, duplicate and merged rows: original columns +
                   _error, _step, _source_row (+ _status, _source_file; one more leading ``_``
                   each while a source column has such a name); formula-like cells neutralised
                   (the header too); in results.csv the text cells are neutralised as well
    report.md      the human summary (see recordsync.report.markdown)
    report.html    the same and more, for a browser (see recordsync.report.html)

Rows go to disk as they come. failures.csv needs the union of the steps' columns for its
header, so failing rows are spooled as JSON lines and turned into CSV at :meth:`finish`.
Past :data:`recordsync.report.rows_file.GZIP_FROM` lines, results.csv and failures.csv are
written gzip-compressed (``results.csv.gz``, ``failures.csv.gz``; summary.json's ``files``
names them).
A failed write stops the run (:mod:`recordsync.report.file_guard`, re-exported here).
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from recordsync.core.errors import RunAborted
from recordsync.core.model import RESULTS_COLUMNS, PreparedRow, RowStatus, UnchangedBlock
from recordsync.reconcile.field_errors import is_rejected_value
from recordsync.report.blocks import block_rows, block_text
from recordsync.report.csvsafe import neutralise
from recordsync.report.examples import named_column
from recordsync.report.file_guard import GuardedFile
from recordsync.report.file_guard import report_write_error as report_write_error
from recordsync.report.html import render_html
from recordsync.report.markdown import render_report
from recordsync.report.parents import ParentFinder
from recordsync.report.rows_file import GZIP_FROM, RowsFile
from recordsync.report.tally import StepTally, totals, totals_errors
from recordsync.tuning.spill import SpillMap

FAILURE_STATUSES = frozenset(
    {
        RowStatus.FAILED,
        RowStatus.INVALID,
        RowStatus.IN_DOUBT,
        RowStatus.DUPLICATE,
        RowStatus.MERGED,
    }
)
"""Rows written to failures.csv (and grouped by reason in report.md): every row without a
record of its own holding its values."""
FAILURE_EXTRA = ("_error", "_step", "_source_row", "_status", "_source_file")
NOT_SENT_PREFIX = "not sent: "


def failure_extra(columns: Iterable[str]) -> tuple[str, ...]:
    """failures.csv's own columns for these source columns: :data:`FAILURE_EXTRA`, each with
    one more leading ``_`` until no source column has any of their names (a source column
    ``_status`` keeps its name and values; the extra columns become ``__status`` ...)."""
    taken = set(columns)
    prefix = ""
    while any(prefix + name in taken for name in FAILURE_EXTRA):
        prefix += "_"
    return tuple(prefix + name for name in FAILURE_EXTRA)


MAX_EXAMPLES = 20


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _add_suggestions(tally: StepTally, suggestions: dict[str, Any], error: str | None) -> None:
    """``{"field": "stage", "value_map": {"Custmer": "customer"}}`` → under "stage /
    value_map": ``Custmer: customer``, counted over rows (and in ``tally.value_maps``, with
    the column the row's message names, up to MAX_EXAMPLES values per field)."""
    field = suggestions.get("field")
    value_map = suggestions.get("value_map")
    if field and isinstance(value_map, dict):
        entry = tally.value_maps.setdefault(str(field), {"column": None, "value_map": {}})
        entry["column"] = entry["column"] or named_column(error or "")
        for src, dst in value_map.items():
            if len(entry["value_map"]) < MAX_EXAMPLES:
                entry["value_map"].setdefault(_cell(src), _cell(dst))
    for key, value in suggestions.items():
        if key == "field":
            continue
        label = f"{field} / {key}" if field else str(key)
        bucket = tally.suggestions.setdefault(label, Counter())
        if isinstance(value, dict):
            for src, dst in value.items():
                bucket[f"{_cell(src)}: {_cell(dst)}"] += 1
        else:
            bucket[_cell(value)] += 1



class ReportWriter:
    """Streams one run's report files into ``directory``."""

    def __init__(
        self,
        directory: Path,
        *,
        dry_run: bool,
        list_unchanged: bool = False,
        gzip_from: int = GZIP_FROM,
    ) -> None:
        self.directory = directory
        self.dry_run = dry_run
        self.list_unchanged = list_unchanged
        """Unchanged rows get a results line too (else they are counted only)."""
        self._gzip_from = gzip_from
        directory.mkdir(parents=True, exist_ok=False)
        self._results_file = RowsFile(directory, "results.csv", gzip_from=gzip_from)
        self._results = csv.writer(self._results_file)
        self._results.writerow(RESULTS_COLUMNS)
        self._failure_lines = 0
        self._spool_path = directory / ".failures.jsonl"
        spool = open(self._spool_path, "w", encoding="utf-8")  # noqa: SIM115
        self._spool = GuardedFile(spool, directory)
        self._columns: dict[str, None] = {}
        self.tallies: list[StepTally] = []
        self._record_rows = SpillMap()
        """record id → (the first source row of the step that landed on it, None); on disk
        past a block of records (:mod:`recordsync.tuning.spill`)."""
        self.lines_written = 0
        self.unlisted = 0
        """Rows found unchanged and not listed in results.csv (counted in the tallies)."""

    def wrote(self, lines: int) -> None:
        """``lines`` more results lines were written (past a threshold: compressed)."""
        self.lines_written += lines
        self._results_file.count(lines)

    def start_step(self, tally: StepTally) -> None:
        self.tallies.append(tally)
        self._record_rows.close()
        self._record_rows = SpillMap()

    def record(
        self,
        tally: StepTally,
        row: PreparedRow,
        status: RowStatus,
        record_id: int | None = None,
        error: str | None = None,
    ) -> None:
        """Write the outcome of one source row. ``match_by`` and ``match_value`` are those of
        the row's batch input (``row.payload``): what went on the wire, or would have (the
        state store and resends may have rewritten the mapping's key, e.g. to the record id)."""
        src = row.source
        if status is RowStatus.UNCHANGED and not self.list_unchanged:
            self.unlisted += 1  # counted, not listed
        else:
            payload = row.payload
            by, value = (
                (payload["match_by"], payload.get("match_value"))
                if payload is not None and "match_by" in payload
                else (row.match_by, row.match_value)
            )
            self._results.writerow(
                [
                    neutralise(tally.step),
                    neutralise(src.source_file),
                    src.source_row,
                    by or "",
                    neutralise(_cell(value)),
                    status.value,
                    _cell(record_id),
                    neutralise(error or ""),
                ]
            )
            self.wrote(1)
        tally.outcomes[status] += 1
        tally.add_owner(row.owner_resolution)
        if status is RowStatus.MERGED and row.status is RowStatus.MERGED:
            tally.merge_held += 1  # predicted: never sent
        if error and status in FAILURE_STATUSES:
            if status is RowStatus.FAILED and error.startswith(NOT_SENT_PREFIX):
                tally.not_sent += 1
            elif status is RowStatus.FAILED and is_rejected_value(error):
                tally.rejected += 1
            key = f"{by} {_cell(value)}" if by else None
            tally.add_reason(error, src, status=status, key=key)
        if row.suggestions:
            _add_suggestions(tally, row.suggestions, error)
        if status in FAILURE_STATUSES:
            self._spool_failure(tally.step, row, status, error)
        elif status is RowStatus.UPDATED and record_id is not None:
            self._note_merge(tally, row, record_id)
        elif status is RowStatus.CREATED and record_id is not None:
            self._record_rows.setdefault(record_id, (src.source_row, None))

    def record_block(self, tally: StepTally, block: UnchangedBlock) -> None:
        """Write rows found unchanged from their digests (:mod:`recordsync.report.blocks`);
        count them only unless ``list_unchanged``."""
        tally.outcomes[RowStatus.UNCHANGED] += len(block)
        if not self.list_unchanged:
            self.unlisted += len(block)
            return
        text = block_text(tally.step, block)
        if text is not None:  # nothing to quote (the common case): the lines, built at once
            self._results_file.write(text)
        else:
            self._results.writerows(block_rows(tally.step, block))
        self.wrote(len(block))

    def _note_merge(self, tally: StepTally, row: PreparedRow, record_id: int) -> None:
        src = row.source
        payload = row.payload or {}
        if "match_by" not in payload:
            tally.merged_creates += 1
            if len(tally.merged_examples) < MAX_EXAMPLES:
                tally.merged_examples.append(
                    f"{src.source_file}:{src.source_row} sent to create, merged into record "
                    f"{record_id}"
                )
        first = self._record_rows.setdefault(record_id, (src.source_row, None))[0]
        if first != src.source_row:
            tally.shared_records += 1
            if len(tally.shared_examples) < MAX_EXAMPLES:
                tally.shared_examples.append(
                    f"{src.source_file}:{src.source_row} landed on record {record_id}, like "
                    f"row {first}"
                )

    def _spool_failure(
        self, step: str, row: PreparedRow, status: RowStatus, error: str | None
    ) -> None:
        values = {str(k): _cell(v) for k, v in row.source.values.items()}
        for key in values:
            if key not in self._columns:
                self._columns[key] = None
        extra = [error or "", step, str(row.source.source_row), status.value]
        extra.append(row.source.source_file)  # the order of FAILURE_EXTRA
        self._spool.write(json.dumps([values, extra], ensure_ascii=False) + "\n")
        self._failure_lines += 1

    def _write_failures_csv(self) -> str:
        """failures.csv (compressed past the threshold) from the spool; its name."""
        self._spool.close()
        columns = list(self._columns)
        compress = self._failure_lines > self._gzip_from
        out = RowsFile(self.directory, "failures.csv", compress=compress)
        try:
            with open(self._spool_path, encoding="utf-8") as spool:
                writer = csv.writer(out)
                writer.writerow([neutralise(c) for c in (*columns, *failure_extra(columns))])
                parents = ParentFinder(self.tallies)  # the rows a missing reference points at
                for line in spool:
                    values, extra = json.loads(line)
                    cells = [values.get(c, "") for c in columns] + extra
                    writer.writerow([neutralise(str(c)) for c in cells])
                    if parents:
                        parents.offer(extra[1], extra[4], int(extra[2]), values, extra[0])
        finally:
            out.close()
        os.unlink(self._spool_path)
        return out.path.name

    def finish(
        self, meta: dict[str, Any], *, extra_errors: list[str] | None = None
    ) -> dict[str, Any]:
        """Close the row files; write summary.json and report.md; return the summary."""
        self._record_rows.close()
        self._results_file.close()
        failures_name = self._write_failures_csv()
        results_name = self._results_file.path.name
        errors = [e for t in self.tallies for e in t.accounting_errors(self.dry_run)]
        total_outcomes = sum(sum(t.outcomes.values()) for t in self.tallies)
        if total_outcomes != self.lines_written + self.unlisted:
            errors.append(
                f"{self.lines_written} lines in {results_name}"
                + (f" and {self.unlisted} unchanged rows not listed" if self.unlisted else "")
                + f" for {total_outcomes} outcomes"
            )
        errors += extra_errors or []
        steps = [
            {**t.as_json(self.dry_run), "attempts": meta.get("attempts", 1)} for t in self.tallies
        ]
        counted = {"steps": steps, "totals": totals(self.tallies)}
        errors += totals_errors(counted)  # the totals row is the sum of the rows above it
        summary = {
            **meta,
            "dry_run": self.dry_run,
            **counted,
            "files": {
                "results": results_name,
                "results_lines": self.lines_written,
                "unchanged_listed": self.list_unchanged,
                "failures": failures_name,
            },
            "accounting_ok": not errors,
            "accounting_errors": errors,
        }
        tmp = self.directory / "summary.json.tmp"
        tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.directory / "summary.json")
        (self.directory / "report.md").write_text(
            render_report(summary, self.tallies), encoding="utf-8"
        )
        (self.directory / "report.html").write_text(
            render_html(summary, self.tallies), encoding="utf-8"
        )
        return summary

    def abandon(self) -> None:
        """Close files after a crash (the partial results stay on disk for inspection)."""
        self._record_rows.close()
        for f in (self._results_file, self._spool):
            if not f.closed:
                with suppress(RunAborted):  # a full disk: the error that stopped us is raised
                    f.close()

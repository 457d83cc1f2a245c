"""Progress of a run: a rich bar on a terminal, plain log lines otherwise (cron), or nothing.

Sources stream, so the total is an estimate (CSV: lines in the file; Parquet: its metadata),
used for the bar's ETA only; the counts in the report are exact.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from recordsync.core.chunk_report import ChunkReport
from recordsync.core.model import StepPlan
from recordsync.report.tally import StepTally


class PlainProgress:
    """One line per step start, every ``every_s`` seconds, per troubled chunk, per step end."""

    def __init__(self, stream: IO[str] | None = None, every_s: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self._rows = 0
        self._start = 0.0
        self._last = 0.0
        self._step = ""

    def _say(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"{stamp} {text}", file=self.stream, flush=True)

    def step_started(self, plan: StepPlan) -> None:
        self._rows, self._start = 0, time.monotonic()
        self._last, self._step = self._start, plan.name
        self._say(f"step {plan.name}: {plan.mapping} -> {plan.object_type}")

    def rows_done(self, count: int) -> None:
        self._rows += count
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            rate = self._rows / max(now - self._start, 1e-9)
            self._say(f"step {self._step}: {self._rows} rows, {rate:.0f} rows/s")

    def chunk_done(self, step: str, report: ChunkReport) -> None:
        if report.attempts > 1 or report.unreconciled:
            note = report.unreconciled or report.last_problem or ""
            self._say(
                f"chunk {report.chunk_id} (source row {report.first_source_row}): "
                f"{report.attempts} tries; {note}"
            )

    def step_finished(self, tally: StepTally) -> None:
        c = tally.counts()
        elapsed = max(time.monotonic() - self._start, 1e-9)
        # rows reported `failed` with "not sent: ..." after a stop are not in rows_sent
        held = f" ({c['not_sent']} not sent)" if c["not_sent"] else ""
        self._say(
            f"step {tally.step} done: read {c['rows_read']}, unchanged {c['rows_unchanged']}, "
            f"sent {c['rows_sent']}, created {c['created']}, updated "
            f"{c['updated']}, failed {c['failed']}{held}, in doubt {c['in_doubt']}, invalid "
            f"{c['rows_invalid']}, duplicate "
            f"{c['rows_duplicate']}, merged {c['rows_merged'] + c['merged']} "
            f"({c['rows_read'] / elapsed:.0f} rows/s)"
        )


class RichProgress:
    """A rich progress bar per step: rows, rows/s, elapsed, and an ETA from the estimated
    number of source rows (CSV line count or Parquet metadata)."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress: Any = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} rows/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task: Any = None
        self._rows = 0
        self._start = 0.0

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def step_started(self, plan: StepPlan) -> None:
        self._rows, self._start = 0, time.monotonic()
        total = plan.estimate() if plan.estimate is not None else None
        self._task = self._progress.add_task(
            f"{plan.name} → {plan.object_type}", total=total, rate="0"
        )

    def rows_done(self, count: int) -> None:
        self._rows += count
        rate = self._rows / max(time.monotonic() - self._start, 1e-9)
        self._progress.update(self._task, advance=count, rate=f"{rate:,.0f}")

    def chunk_done(self, step: str, report: ChunkReport) -> None:
        if report.attempts > 1 or report.unreconciled:
            note = report.unreconciled or report.last_problem or ""
            self._progress.console.print(
                f"chunk {report.chunk_id}: {report.attempts} tries; {note}"
            )

    def step_finished(self, tally: StepTally) -> None:
        if self._task is not None:
            self._progress.update(self._task, total=self._rows, completed=self._rows)

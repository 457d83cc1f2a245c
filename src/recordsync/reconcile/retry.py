"""``recordsync retry REPORT_DIR``: resend the failed and in-doubt rows of an earlier run.

The rows come from that run's ``failures.csv`` (which you may have edited), the mappings from
its pipeline file (``pipeline_file`` in summary.json). Per step, the rows with ``_status``
``failed`` or ``in_doubt`` are written (un-neutralised, without the ``_`` columns) to a CSV
file that replaces the mapping's source; results are reported against the original file and
row (``_source_file``, ``_source_row``). The new report has ``retry_of`` = the old run id.

In-doubt rows may already be in the target. One that is safe to resend
(:func:`recordsync.send.safety.resend_as_is_safe`) goes as is. Each other one is read back
(:class:`recordsync.send.settle.Settler`: records of its name written since the earlier run
started, other than the records that run reported for its rows): absent, it is sent as it
was; applied, it is sent ``match_by: id`` to the record found, its own; unknown, it is held
``in_doubt`` again with what was found (unless ``resend_in_doubt=True``). It is never resent
by name: a name may be another row's record.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from recordsync.errors import ConfigError
from recordsync.model import BatchInput, PreparedRow, RowStatus, SourceRow
from recordsync.report.csvsafe import unneutralise
from recordsync.report.writer import FAILURE_EXTRA
from recordsync.runner import RunResult
from recordsync.send.client import RecordServiceClient, make_http_client
from recordsync.send.pipeline import RunRequest, run_pipeline
from recordsync.send.safety import resend_as_is_safe
from recordsync.send.settle import Decision, Settler
from recordsync.send.step import StepPlan
from recordsync.settings import Target

RETRY_STATUSES = frozenset({"failed", "in_doubt"})


@dataclass(frozen=True, slots=True)
class Origin:
    source_file: str
    source_row: int
    status: str


def read_summary(report_dir: Path) -> dict[str, Any]:
    path = report_dir / "summary.json"
    if not path.is_file():
        raise ConfigError(
            f"{path} not found: not a recordsync report directory", file=str(report_dir)
        )
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def nothing_to_retry(report_dir: Path) -> str | None:
    """Why there is nothing to resend (no ``failed`` or ``in_doubt`` row in failures.csv), or
    None when there is something (or no failures.csv: :func:`retry_report` says so)."""
    path = report_dir / "failures.csv"
    if not path.is_file():
        return None
    statuses: Counter[str] = Counter()
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            statuses[unneutralise(row.get("_status") or "")] += 1
    if any(statuses[s] for s in RETRY_STATUSES):
        return None
    invalid = statuses["invalid"]
    if not invalid:
        return "nothing to retry: the run has no failed, in-doubt or invalid rows"
    return (
        f"nothing to retry: {invalid} invalid row{'s' if invalid != 1 else ''} need"
        f"{'' if invalid != 1 else 's'} fixing in the source (or set `_status` to `failed` in "
        f"{path} to resend them)"
    )


def split_failures(report_dir: Path, out_dir: Path) -> dict[str, tuple[Path, dict[int, Origin]]]:
    """Write one CSV per step with retryable rows; map its line numbers to the originals."""
    path = report_dir / "failures.csv"
    if not path.is_file():
        raise ConfigError(f"{path} not found", file=str(report_dir))
    steps: dict[str, tuple[Path, dict[int, Origin]]] = {}
    writers: dict[str, tuple[Any, Any, list[str], list[int]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = [c for c in (reader.fieldnames or []) if c not in FAILURE_EXTRA]
        try:
            for row in reader:
                values = {k: unneutralise(v or "") for k, v in row.items() if k is not None}
                if values.get("_status") not in RETRY_STATUSES:
                    continue
                step = values["_step"]
                if step not in writers:
                    target = out_dir / f"{len(writers):03d}-retry.csv"
                    handle = open(target, "w", newline="", encoding="utf-8")  # noqa: SIM115
                    w = csv.writer(handle, lineterminator="\n")
                    w.writerow(columns)
                    writers[step] = (handle, w, columns, [2])
                    steps[step] = (target, {})
                handle, w, cols, line = writers[step]
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerow([values.get(c, "") for c in cols])
                text = buf.getvalue()
                handle.write(text)
                steps[step][1][line[0]] = Origin(
                    values.get("_source_file", ""), int(values["_source_row"]), values["_status"]
                )
                line[0] += text.count("\n")
        finally:
            for handle, *_ in writers.values():
                handle.close()
    return steps


@dataclass(slots=True)
class ReadBack:
    """What a retry needs to read in-doubt rows back: the target (known once the run has
    opened it), the client's transport if injected, when the earlier run started (epoch)
    and the record ids it reported for its rows."""

    since: float | None
    claimed: set[int]
    http: httpx.Client | None = None
    target: Target | None = None
    retry: Any = None

    def settle(self, object_type: str, payloads: list[BatchInput]) -> dict[int, Decision]:
        """A decision per payload (by index); all ``unknown`` when it cannot be read."""
        if self.target is None or self.since is None:
            why = "the earlier run's start time is not known" if self.since is None else ""
            why = why or "no target to read"
            return {i: Decision("unknown", why=why) for i in range(len(payloads))}
        own = self.http is None
        http = self.http or make_http_client(base_url=self.target.base_url)
        try:
            client = RecordServiceClient(
                http, self.target.base_url, self.target.api_key, retry=self.retry
            )
            settler = Settler(client, object_type, client.retry.clock)
            return settler.settle(payloads, list(range(len(payloads))), self.since, self.claimed)
        finally:
            if own:
                http.close()


def _retry_plan(
    plan: StepPlan, origins: dict[int, Origin], resend_in_doubt: bool, read_back: ReadBack
) -> StepPlan:
    def in_doubt(row: PreparedRow) -> bool:
        origin = origins.get(row.source.source_row)
        return bool(origin and origin.status == "in_doubt" and row.status is RowStatus.VALID)

    def rows() -> Iterator[PreparedRow]:
        unsafe: dict[int, BatchInput] = {}  # first pass: rows to read back (small: failures)
        if not resend_in_doubt:
            for row in plan.rows():
                payload = row.payload or {}
                if in_doubt(row) and not resend_as_is_safe(plan.object_type, payload):
                    unsafe[row.source.source_row] = payload
        lines = list(unsafe)
        decided = read_back.settle(plan.object_type, list(unsafe.values())) if unsafe else {}
        decisions = {lines[i]: d for i, d in decided.items()}
        for row in plan.rows():
            line = row.source.source_row
            origin = origins.get(line)
            if origin is not None:
                row.source = SourceRow(origin.source_file, origin.source_row, row.source.values)
            d = decisions.get(line)
            if d is None or d.kind == "absent" or not in_doubt(row):
                yield row
            elif d.kind == "applied" and d.result is not None and d.result.record_id is not None:
                row.payload = {
                    **(row.payload or {}),
                    "match_by": "id",
                    "match_value": d.result.record_id,
                }
                yield row
            else:
                row.status = RowStatus.IN_DOUBT
                row.error = (
                    f"held in doubt: it may be in the target already and cannot be resent"
                    f" without risking a duplicate or another row's record: {d.why}; check the"
                    " target, then retry with --resend-in-doubt"
                )
                yield row

    return replace(plan, rows=rows)


def _earlier_run(report_dir: Path, summary: dict[str, Any]) -> tuple[float | None, set[int]]:
    """When the earlier run started (epoch) and the record ids its results.csv names."""
    started = summary.get("started_at")
    since: float | None = None
    if isinstance(started, str):
        try:
            since = datetime.fromisoformat(started).timestamp()
        except ValueError:
            since = None
    ids: set[int] = set()
    path = report_dir / "results.csv"
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                rid = unneutralise(row.get("record_id") or "").strip()
                if rid.isdigit():
                    ids.add(int(rid))
    return since, ids


def retry_report(
    report_dir: Path,
    request: RunRequest | None = None,
    *,
    resend_in_doubt: bool = False,
    **kwargs: Any,
) -> RunResult:
    """Resend the failed and in-doubt rows of the run in ``report_dir``."""
    from recordsync.config import load_pipeline

    summary = read_summary(report_dir)
    pipeline_file = summary.get("pipeline_file")
    if not pipeline_file or not Path(pipeline_file).is_file():
        raise ConfigError(
            f"the pipeline of this run ({pipeline_file}) is not available",
            file=str(report_dir / "summary.json"),
            key="pipeline_file",
        )
    pipeline = load_pipeline(pipeline_file)
    with tempfile.TemporaryDirectory(prefix="recordsync-retry-") as tmp:
        parts = split_failures(report_dir, Path(tmp))
        if not parts:
            raise ConfigError(
                nothing_to_retry(report_dir) or "nothing to retry",
                file=str(report_dir / "failures.csv"),
            )
        steps = []
        origins: dict[str, dict[int, Origin]] = {}
        for step in pipeline.steps:
            if step.step_name not in parts:
                continue
            csv_path, origins[step.step_name] = parts[step.step_name]
            source = step.config.source.model_copy(
                update={
                    "path": str(csv_path),
                    "format": "csv",
                    "delimiter": ",",
                    "quotechar": '"',
                    "escapechar": None,
                    "header": True,
                    "columns": None,
                    "encoding": "utf-8",
                    "skip_rows": 0,
                }
            )
            new_step = step.model_copy()
            new_step._config = step.config.model_copy(update={"source": source})
            new_step._base_dir = step.base_dir
            steps.append(new_step)
        override = pipeline.model_copy(update={"steps": steps})
        base = request or RunRequest(Path(pipeline_file))
        base = replace(base, pipeline_path=Path(pipeline_file), resend_in_doubt=resend_in_doubt)
        since, claimed = _earlier_run(report_dir, summary)
        read_back = ReadBack(since, claimed, kwargs.get("http"), kwargs.get("target"), base.retry)
        announce: Callable[[Target], None] | None = kwargs.pop("on_target", None)

        def on_target(target: Target) -> None:
            read_back.target = target
            if announce is not None:
                announce(target)

        def wrap(plan: StepPlan) -> StepPlan:
            return _retry_plan(plan, origins[plan.name], resend_in_doubt, read_back)

        return run_pipeline(
            base,
            pipeline_override=override,
            wrap=wrap,
            retry_of=str(summary.get("run_id")),
            on_target=on_target,
            **kwargs,
        )

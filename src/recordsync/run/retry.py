"""``recordsync retry REPORT_DIR``: resend the failed and in-doubt rows of an earlier run.

The rows come from that run's ``failures.csv`` (which you may have edited), the mappings from
its pipeline file (``pipeline_file`` in summary.json). Per step, the rows with ``_status``
``failed`` or ``in_doubt`` are written (un-neutralised, without the ``_`` columns) to a CSV
file that replaces the mapping's source; results are reported against the original file and
row (``_source_file``, ``_source_row``). The new report has ``retry_of`` = the old run id.

In-doubt rows may already be in the target. One that is safe to resend
(:func:`recordsync.core.safety.resend_as_is_safe`) goes as is. Each other one is marked
``maybe_applied_since`` the earlier run's start, and the sender reads it back before sending
it (:mod:`recordsync.send.settle`; the records that run's results.csv gives to its rows are
never taken): absent, it is sent as it was; found, it takes that record and is not sent;
unclear, it is held ``in_doubt`` again with what was found. ``resend_in_doubt=True`` sends
them as they are. Nothing is resent by name: a name may be another row's record.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from recordsync.config import SourceConfig, load_pipeline
from recordsync.core.errors import ConfigError
from recordsync.core.model import PreparedRow, RowStatus, SourceRow, StepPlan
from recordsync.core.run_ids import first_attempt_started
from recordsync.core.safety import resend_as_is_safe
from recordsync.report.csvsafe import unneutralise
from recordsync.report.rows_file import find_rows_file, open_rows_file
from recordsync.report.writer import FAILURE_EXTRA
from recordsync.run.pipeline import RunRequest, run_pipeline
from recordsync.run.runner import RunResult

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


class FailuresFile:
    """A failures.csv read back: un-neutralised header and cells, the source columns apart
    from failures.csv's own (``_status`` ... or, when a source column had such a name,
    ``__status`` ...: :func:`recordsync.report.writer.failure_extra`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open_rows_file(path)  # failures.csv, or failures.csv.gz
        self._reader = csv.reader(self._file)
        header = [unneutralise(c) for c in next(self._reader, [])]
        extra = _own_columns(header)
        self.extra = dict(zip(FAILURE_EXTRA, extra, strict=True))
        """``_status`` → the name failures.csv gives that column."""
        self.columns = [c for c in header if c not in set(extra)]
        self._header = header

    def __enter__(self) -> FailuresFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def rows(self) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
        """(source cells, failures.csv's own cells by their plain names ``_status`` ...)."""
        for cells in self._reader:
            values = dict(zip(self._header, (unneutralise(c) for c in cells), strict=False))
            own = {plain: values.pop(name, "") for plain, name in self.extra.items()}
            yield values, own


def _own_columns(header: list[str]) -> tuple[str, ...]:
    """failures.csv's own column names in ``header``: the writer puts them last; when an
    editor moved them, the names with the most leading ``_`` that are all there."""
    most = max((len(h) - len(h.lstrip("_")) for h in header), default=0)
    candidates = [tuple("_" * k + n for n in FAILURE_EXTRA) for k in range(most + 1)]
    for names in candidates:
        if tuple(header[-len(names) :]) == names:
            return names
    present = [names for names in candidates if all(n in header for n in names)]
    return present[-1] if present else FAILURE_EXTRA


def nothing_to_retry(report_dir: Path) -> str | None:
    """Why there is nothing to resend (no ``failed`` or ``in_doubt`` row in failures.csv), or
    None when there is something (or no failures.csv: :func:`retry_report` says so)."""
    path = find_rows_file(report_dir, "failures.csv")
    if path is None:
        return None
    statuses: Counter[str] = Counter()
    with FailuresFile(path) as failures:
        name = failures.extra["_status"]
        for _, own in failures.rows():
            statuses[own["_status"]] += 1
    if any(statuses[s] for s in RETRY_STATUSES):
        return None
    invalid = statuses["invalid"]
    if not invalid:
        return "nothing to retry: the run has no failed, in-doubt or invalid rows"
    return (
        f"nothing to retry: {invalid} invalid row{'s' if invalid != 1 else ''} need"
        f"{'' if invalid != 1 else 's'} fixing in the source (or set `{name}` to `failed` in "
        f"{path} to resend them)"
    )


def failures_source(source: SourceConfig, csv_path: Path) -> SourceConfig:
    """``source`` reading the failures of it that :func:`split_failures` wrote to
    ``csv_path``: the CSV dialect recordsync writes, its multi-line cells taken as written
    (:attr:`recordsync.config.SourceConfig.own_file`)."""
    return source.model_copy(
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
    ).as_own_file()


def split_failures(report_dir: Path, out_dir: Path) -> dict[str, tuple[Path, dict[int, Origin]]]:
    """Write one CSV per step with retryable rows; map its line numbers to the originals.

    Every cell is quoted, so a bare carriage return, a line break, a quote or a comma in a
    cell comes back exactly (a bare CR left unquoted would end the record for the reader);
    the CSV reader numbers lines by the line breaks in cells, as counted here."""
    path = find_rows_file(report_dir, "failures.csv")
    if path is None:
        raise ConfigError(f"{report_dir / 'failures.csv'} not found", file=str(report_dir))
    steps: dict[str, tuple[Path, dict[int, Origin]]] = {}
    writers: dict[str, tuple[Any, Any, list[int]]] = {}
    with FailuresFile(path) as failures:
        cols = failures.columns
        try:
            for values, own in failures.rows():
                if own["_status"] not in RETRY_STATUSES:
                    continue
                step = own["_step"]
                if step not in writers:
                    target = out_dir / f"{len(writers):03d}-retry.csv"
                    handle = open(target, "w", newline="", encoding="utf-8")  # noqa: SIM115
                    w = csv.writer(handle, lineterminator="\n", quoting=csv.QUOTE_ALL)
                    w.writerow(cols)
                    writers[step] = (handle, w, [2])
                    steps[step] = (target, {})
                handle, w, line = writers[step]
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL).writerow(
                    [values.get(c, "") for c in cols]
                )
                text = buf.getvalue()
                handle.write(text)
                steps[step][1][line[0]] = Origin(
                    own["_source_file"], int(own["_source_row"]), own["_status"]
                )
                line[0] += text.count("\n")
        finally:
            for handle, *_ in writers.values():
                handle.close()
    return steps


def _retry_plan(
    plan: StepPlan,
    origins: dict[int, Origin],
    resend_in_doubt: bool,
    since: float | None,
    claimed: frozenset[int],
) -> StepPlan:
    def rows() -> Iterator[PreparedRow]:
        for row in plan.rows():
            origin = origins.get(row.source.source_row)
            if origin is not None:
                row.source = SourceRow(origin.source_file, origin.source_row, row.source.values)
            if origin is None or origin.status != "in_doubt" or row.status is not RowStatus.VALID:
                yield row
                continue
            payload = row.payload or {}
            if resend_in_doubt or resend_as_is_safe(plan.object_type, payload):
                yield row
            elif since is not None:
                row.maybe_applied_since = since  # the sender reads it back first
                yield row
            else:
                row.status = RowStatus.IN_DOUBT
                row.error = (
                    "held in doubt: it may be in the target already, and the earlier run's"
                    " start (started_at in its summary.json) is not known to read it back;"
                    " check the target, then retry with --resend-in-doubt"
                )
                yield row

    return replace(plan, rows=rows, known_ids=claimed)


def _earlier_run(report_dir: Path, summary: dict[str, Any]) -> tuple[float | None, frozenset[int]]:
    """When the earlier run started (epoch) and the record ids its results.csv names.

    The earlier of its ``started_at`` and the start its run id carries: a resumed run keeps
    the id of the attempt that died, and rows it holds in doubt may have been written by
    that attempt, before the resumed one's ``started_at`` (seconds before, or hours)."""
    starts = [first_attempt_started(summary.get("run_id"))]
    started = summary.get("started_at")
    if isinstance(started, str):
        with contextlib.suppress(ValueError):
            starts.append(datetime.fromisoformat(started).timestamp())
    known = [s for s in starts if s is not None]
    since = min(known) if known else None
    ids: set[int] = set()
    path = find_rows_file(report_dir, "results.csv")  # or results.csv.gz
    if path is not None:
        with open_rows_file(path) as f:
            for row in csv.DictReader(f):
                rid = unneutralise(row.get("record_id") or "").strip()
                if rid.isdigit():
                    ids.add(int(rid))
    return since, frozenset(ids)


def retry_report(
    report_dir: Path,
    request: RunRequest | None = None,
    *,
    resend_in_doubt: bool = False,
    **kwargs: Any,
) -> RunResult:
    """Resend the failed and in-doubt rows of the run in ``report_dir``."""
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
                file=str(find_rows_file(report_dir, "failures.csv") or report_dir),
            )
        steps = []
        origins: dict[str, dict[int, Origin]] = {}
        for step in pipeline.steps:
            if step.step_name not in parts:
                continue
            csv_path, origins[step.step_name] = parts[step.step_name]
            source = failures_source(step.config.source, csv_path)
            new_step = step.model_copy()
            new_step._config = step.config.model_copy(update={"source": source})
            new_step._base_dir = step.base_dir
            steps.append(new_step)
        override = pipeline.model_copy(update={"steps": steps})
        base = request or RunRequest(Path(pipeline_file))
        base = replace(base, pipeline_path=Path(pipeline_file), resend_in_doubt=resend_in_doubt)
        since, claimed = _earlier_run(report_dir, summary)

        def wrap(plan: StepPlan) -> StepPlan:
            return _retry_plan(plan, origins[plan.name], resend_in_doubt, since, claimed)

        return run_pipeline(
            base,
            pipeline_override=override,
            wrap=wrap,
            retry_of=str(summary.get("run_id")),
            **kwargs,
        )

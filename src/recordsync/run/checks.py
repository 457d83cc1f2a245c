"""Offline checks of a whole pipeline: configs, sources readable and in their encoding,
columns present.

Optionally against a saved schema/users (JSON of GET /api/meta/schema and /users), and
optionally scanning every row (``scan``) to count valid, invalid, duplicate and merged rows,
with the run's own preparation (:func:`recordsync.prepare.prepare_step`: the same duplicate
groups, ledger keys included, and the same merge prediction).
"""

from __future__ import annotations

import codecs
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from recordsync.config.models import PipelineConfig, StepConfig
from recordsync.core.errors import ConfigError
from recordsync.map.engine import BatchMapper
from recordsync.prepare import check_source, prepare_step
from recordsync.read.csv_blocks import open_file
from recordsync.read.paths import is_remote, locate
from recordsync.read.utf8guard import first_bad_line, not_utf8_error
from recordsync.validate.config_check import check_mapping
from recordsync.validate.refs_check import check_refs
from recordsync.validate.schema import Schema


@dataclass(slots=True)
class StepReport:
    name: str
    mapping: str
    object_type: str
    source: str
    columns: int = 0
    error: ConfigError | None = None
    counts: Counter[str] = field(default_factory=Counter)
    first_problems: list[str] = field(default_factory=list)
    problems: int = 0
    """Rows with an error (invalid, duplicate, merged); ``first_problems`` shows the first few."""

    @property
    def ok(self) -> bool:
        return self.error is None


def check_step(
    step: StepConfig,
    *,
    schema: Schema | None,
    users: list[dict[str, Any]] | None,
    scan: bool,
    show: int = 5,
    read_through: bool = True,
) -> StepReport:
    """``read_through=False`` (a run's check before its first send): a UTF-8 source is not read
    to its end for its encoding (the run meets a bad byte where it reads it: exit 3 after a
    send, with the report); ``validate`` reads it through, to find that byte offline."""
    m = step.config
    src = m.source
    source = str(locate(step.base_dir, src.path)) if src.query is None else src.label
    rep = StepReport(step.step_name, m.label, m.object_type, source)
    try:
        rep.columns = len(check_source(m, step.base_dir))
        if not scan and read_through:  # a scan reads every row: it meets such a byte itself
            check_encoding(step)
        BatchMapper(m, base_dir=step.base_dir, schema=schema, users=users)
        if scan:
            for row in prepare_step(m, base_dir=step.base_dir, schema=schema, users=users):
                rep.counts[row.status.value] += 1
                if row.error:
                    rep.problems += 1
                    if len(rep.first_problems) < show:
                        rep.first_problems.append(_problem(row.source.source_row, row.error))
    except ConfigError as exc:
        rep.error = _with_schema_problems(exc, step, schema)
    return rep


def check_encoding(step: StepConfig) -> None:
    """A local CSV source read as UTF-8 must be UTF-8 throughout, as a run reads it: else the
    run's own error (:func:`recordsync.read.utf8guard.not_utf8_error`: the file, its first
    line that is not UTF-8, ``source.encoding``). A run meets that byte only where it reads
    it, so checking the header (or the first block) is not enough."""
    src = step.config.source
    if src.kind != "csv" or is_remote(src.path) or not _is_utf8(src.encoding):
        return
    path = locate(step.base_dir, src.path)
    with open_file(path) as stream:
        bad = first_bad_line(stream)
    if bad is not None:
        with open_file(path) as stream:
            raise not_utf8_error(path, stream, src.encoding)


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:
        return False  # named by the reader when it opens the file


def _with_schema_problems(
    exc: ConfigError, step: StepConfig, schema: Schema | None
) -> ConfigError:
    """A missing-columns error, with the mapping's schema problems (unknown fields, ...) in
    the same message: every unknown column and field in one pass."""
    if schema is None or exc.key not in ("columns", "source.delimiter"):
        return exc
    try:
        check_mapping(step.config, schema)
    except ConfigError as also:
        return ConfigError(
            f"{exc.detail}\n  also: " + str(also).replace("\n  hint: ", " (") + ")",
            file=exc.file,
            line=exc.line,
            key=exc.key,
            hint=exc.hint,
        )
    return exc


def _problem(source_row: int, error: str) -> str:
    """``row N: error``, without the ``line N:`` a malformed line's error already starts with."""
    return f"row {source_row}: {error.removeprefix(f'line {source_row}: ')}"


def check_pipeline(
    pipeline: PipelineConfig,
    *,
    schema: Schema | None = None,
    users: list[dict[str, Any]] | None = None,
    scan: bool = False,
) -> list[StepReport]:
    """One report per step, in order; config errors are collected, not raised (a ``ref``
    that names no earlier step, or a ``ref.by`` that names nothing: on the referring step)."""
    reports = [check_step(s, schema=schema, users=users, scan=scan) for s in pipeline.steps]
    if all(r.ok for r in reports):
        try:
            check_refs(pipeline)
        except ConfigError as exc:
            rep = next((r for r in reports if r.mapping == exc.file), reports[-1])
            rep.error = exc
    return reports

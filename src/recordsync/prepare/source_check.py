"""A step's source checked against its mapping before any row is prepared: it opens, and
its header (of every file, for a directory or glob source) has every column the mapping uses;
a header name that differs only in spaces or case is named, never matched (unless the
mapping says ``source: {header_case: insensitive}``: then two header names that fold
together are its error). Used by :mod:`recordsync.prepare.core` (which re-exports both
checks)."""

from __future__ import annotations

from pathlib import Path

from recordsync.config.loader import mapping_line
from recordsync.config.models import MappingConfig
from recordsync.core.errors import ConfigError, SourceError
from recordsync.map.engine import BatchMapper
from recordsync.read import SourceBatch, header_case, source_columns
from recordsync.read.paths import check_source_file, is_remote, source_path
from recordsync.validate.column_hints import delimiter_problem, first_line, missing_lines


def _near_miss(column: str, header: list[str]) -> str | None:
    """``column 'X' not found; the header has 'X ' (trailing space)`` when a header name
    equals ``column`` up to surrounding spaces and case, else None."""
    key = column.strip().casefold()
    for h in header:
        if h.strip().casefold() != key:
            continue
        how = []
        if h.rstrip() != h and column.rstrip() == column:
            how.append("trailing space")
        if h.lstrip() != h and column.lstrip() == column:
            how.append("leading space")
        if h.strip() != column.strip() and h.strip().casefold() == column.strip().casefold():
            how.append("different case")
        why = f" ({', '.join(how)})" if how else ""
        return f"column {column!r} not found; the header has {h!r}{why}"
    return None


def check_source(mapping: MappingConfig, base_dir: Path) -> list[str]:
    """The source's columns, after checking it opens and has every column the mapping uses."""
    try:
        if mapping.source.kind == "csv" and not is_remote(mapping.source.path):
            check_source_file(source_path(base_dir, mapping.source.path), mapping.source.encoding)
        have = source_columns(mapping.source, base_dir)
    except ConfigError as exc:
        if exc.key == header_case.KEY:  # names the mapping's option, where it is set
            raise type(exc)(
                exc.detail,
                file=mapping.label,
                line=mapping_line(mapping, "source", "header_case"),
                key=exc.key,
                hint=exc.hint,
            ) from None
        where = f"{exc.file}:{exc.line}" if exc.line is not None else exc.file
        raw = exc.detail if where is None else f"{where}: {exc.detail}"
        raise type(exc)(
            raw,
            file=mapping.label,
            line=mapping_line(mapping, "source", "path"),
            key=exc.key or "source.path",
            hint=exc.hint,
        ) from None
    missing = [c for c in mapping.source_columns() if c not in have]
    if missing:
        split = delimiter_problem(mapping, have)
        if split is not None:  # no did-you-mean of the whole header line
            raise ConfigError(
                f"{split[0]}; column(s) not in the header: {', '.join(map(repr, missing))}",
                file=mapping.label,
                line=mapping_line(mapping, "source"),
                key="source.delimiter",
                hint=split[1],
            )
        msg = f"column(s) not in the source's header: {', '.join(map(repr, missing))}"
        near = [n for n in (_near_miss(c, have) for c in missing) if n]
        if near:  # a header that differs only in spaces or case: say so first, never match it
            fix = "write the column exactly as in the header, or fix the header (or set"
            fix += " source.header_case: insensitive)"
            msg = f"{'; '.join(near)}: {fix}" + ("" if len(near) == len(missing) else f"; {msg}")
        msg += "\n  " + "\n  ".join(missing_lines(mapping, missing, have))
        raise ConfigError(
            msg,
            file=mapping.label,
            line=first_line(mapping, missing),
            key="columns",
            hint=f"columns of {mapping.source.label}: {', '.join(map(repr, have))}",
        )
    return have


def check_batch_columns(sb: SourceBatch, mapper: BatchMapper, mapping: MappingConfig) -> None:
    """A file of a directory or glob source must have every column the mapping uses."""
    missing = [c for c in mapper.columns_used if c not in sb.batch.schema.names]
    if missing and sb.batch.num_columns:
        raise SourceError(
            f"{sb.file} lacks column(s) {', '.join(map(repr, missing))} that the mapping uses",
            file=mapping.label,
            key="source.path",
            hint="every file of a directory or glob source needs the mapped columns",
        )

"""``source: {header_case: insensitive}``: mapping columns match header names in any case.

The header is read once when the mapping is loaded; each header name that equals a column
the mapping names up to case and surrounding spaces is renamed to the mapping's spelling
(through ``source.columns``, which replaces the header), so the rest of the run sees the
mapping's names. Two header names that fold to one column are a configuration error.
"""

from __future__ import annotations

from pathlib import Path

from recordsync.config.models import MappingConfig
from recordsync.core.errors import ConfigError


def fold_header(mapping: MappingConfig, line: int | None) -> MappingConfig:
    """The mapping with ``source.columns`` set to its header renamed (CSV only)."""
    src = mapping.source
    where = {"file": mapping.label, "line": line, "key": "source.header_case"}
    if src.kind != "csv":
        raise ConfigError(
            "header_case: insensitive applies to CSV sources (Parquet names are exact)",
            hint="write the columns exactly as the Parquet schema names them",
            **where,  # type: ignore[arg-type]
        )
    if src.columns or not src.header:
        return mapping  # the names are the mapping's own already
    from recordsync.read import source_columns

    base = mapping.path.parent if mapping.path is not None else Path.cwd()
    try:
        header = source_columns(src, base)
    except ConfigError:
        return mapping  # a missing or unreadable source is reported where sources are checked
    wanted = {c.strip().casefold(): c for c in mapping.source_columns()}
    renamed: list[str] = []
    for h in header:
        c = wanted.get(h.strip().casefold())
        renamed.append(c if c is not None and c not in header else h)
    twice = sorted({n for n in renamed if renamed.count(n) > 1})
    if twice:
        same = [h for h in header if h.strip().casefold() == twice[0].strip().casefold()]
        raise ConfigError(
            f"header names {', '.join(map(repr, same))} differ only in case: with"
            f" header_case: insensitive, column {twice[0]!r} would be either",
            hint="rename one in the file, or use header_case: exact",
            **where,  # type: ignore[arg-type]
        )
    if renamed == header:
        return mapping
    out = mapping.model_copy(update={"source": src.model_copy(update={"columns": renamed})})
    out._path, out._node = mapping._path, mapping._node
    return out

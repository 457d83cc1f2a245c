"""``source: {header_case: insensitive}``: the header's names read as the mapping spells them.

Each header name that equals a column the mapping names (:attr:`SourceConfig.case_names
<recordsync.config.mapping_parts.SourceConfig.case_names>`) up to case and surrounding spaces
is renamed to the mapping's spelling, wherever the source is opened (its columns, its
batches), so that the rest of the run sees the mapping's names. Two header names that fold
to one column are a configuration error (``source.header_case``), raised by the source's
check before anything is read or sent (:mod:`recordsync.prepare.source_check`). The option
itself, and that it applies to CSV sources only, is checked when the mapping is loaded
(:mod:`recordsync.config.header_case`).
"""

from __future__ import annotations

from collections.abc import Sequence

from recordsync.config.models import SourceConfig
from recordsync.core.errors import ConfigError

KEY = "source.header_case"
"""The config key the errors of this module name."""


def folds(source: SourceConfig) -> bool:
    """Whether ``source``'s header is read through :func:`fold_header`: a CSV source with
    ``header_case: insensitive`` whose header gives the names (no ``columns``)."""
    return (
        source.header_case == "insensitive"
        and source.kind == "csv"
        and source.header
        and not source.columns
        and bool(source.case_names)
    )


def fold_header(header: Sequence[str], names: Sequence[str]) -> list[str]:
    """``header`` with each name that equals one of ``names`` up to case and surrounding
    spaces renamed to that spelling (a name already in the header stays as it is)."""
    wanted = {c.strip().casefold(): c for c in names}
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
            key=KEY,
            hint="rename one in the file, or use header_case: exact",
        )
    return renamed


def named(source: SourceConfig, header: Sequence[str]) -> SourceConfig:
    """``source`` reading ``header`` (its own header) as :func:`fold_header` names it: its
    ``columns`` set to the renamed header when a name changes (``columns`` with a header
    replaces the header's names)."""
    renamed = fold_header(header, source.case_names)
    if renamed == list(header):
        return source
    return source.model_copy(update={"columns": renamed})

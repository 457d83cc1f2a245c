"""``source: {header_case: insensitive}``: the option checked when the mapping is loaded.

It applies to CSV sources (Parquet and query columns are named exactly). Reading the
header's names as the mapping spells them happens where the source is opened
(:mod:`recordsync.read.header_case`), and a header whose names fold together is reported by
the source's check, before anything is sent.
"""

from __future__ import annotations

from recordsync.config.models import MappingConfig
from recordsync.core.errors import ConfigError


def check_header_case(mapping: MappingConfig, line: int | None) -> None:
    """``header_case: insensitive`` on a source that is not CSV is a configuration error."""
    if mapping.source.header_case == "insensitive" and mapping.source.kind != "csv":
        raise ConfigError(
            "header_case: insensitive applies to CSV sources (Parquet names are exact)",
            file=mapping.label,
            line=line,
            key="source.header_case",
            hint="write the columns exactly as the Parquet schema names them",
        )
